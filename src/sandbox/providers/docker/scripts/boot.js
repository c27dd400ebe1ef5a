// sandbox-console docker bootstrap (node -e <this>): reads the run's files as JSON from stdin
// (sent through the Engine API, never argv or a host file), writes them into the fresh
// /workspace, then runs the shared main() runner in this same process. On exit it flags on
// stderr whether ./artifacts holds anything, so the provider only asks for artifacts then.
'use strict';
const fs = require('fs');
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const job = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  process.chdir('/workspace');
  for (const [name, data] of Object.entries(job.files)) fs.writeFileSync(name, Buffer.from(data, 'base64'));
  process.on('exit', () => {
    try {
      if (fs.readdirSync('/workspace/artifacts').length) process.stderr.write('\n' + job.flag + '\n');
    } catch (_) {}
  });
  process.argv = [process.argv[0], '/workspace/_runner.js', '_input.json'];
  require('/workspace/_runner.js');
});
