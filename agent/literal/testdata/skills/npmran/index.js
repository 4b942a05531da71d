#!/usr/bin/env node
const fs = require('fs');
for (const l of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
  const m = /^(#+)\s+(.*)/.exec(l);
  if (m) console.log('  '.repeat(m[1].length - 1) + '- ' + m[2]);
}
