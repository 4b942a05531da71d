// Group commit subjects since the last tag by conventional-commit type.
const { execSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const root = process.argv[2] || '.';
for (const d of fs.existsSync(root) ? fs.readdirSync(root) : []) {
  const repo = path.join(root, d);
  let log = '';
  try { log = execSync('git log --pretty=%s -50', { cwd: repo, encoding: 'utf8' }); } catch { continue; }
  const groups = {};
  for (const s of log.split('\n').filter(Boolean)) {
    const t = (s.match(/^(\w+)(\(.+\))?:/) || [])[1] || 'other';
    (groups[t] = groups[t] || []).push(s);
  }
  console.log(`## ${d}`);
  for (const [t, list] of Object.entries(groups)) console.log(`### ${t}\n` + list.map((s) => `- ${s}`).join('\n'));
}
