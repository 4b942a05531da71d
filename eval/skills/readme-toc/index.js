#!/usr/bin/env node
// Prints a Markdown table of contents for the headings of a file.
const fs = require('fs');
const file = process.argv[2];
let text = '';
try { text = fs.readFileSync(file, 'utf8'); } catch (e) { console.error(`cannot read ${file}`); process.exit(1); }
let inFence = false;
for (const line of text.split('\n')) {
  if (/^(```|~~~)/.test(line)) inFence = !inFence;
  const m = !inFence && line.match(/^(#{2,4})\s+(.*)$/);
  if (!m) continue;
  const anchor = m[2].toLowerCase().replace(/[^\w\s-]/g, '').trim().replace(/\s+/g, '-');
  console.log(`${'  '.repeat(m[1].length - 2)}- [${m[2]}](#${anchor})`);
}
