// sandbox-console artifact collector: node -e <this> MAX_COUNT MAX_BYTES EXTENSIONS.
// Lists /workspace/artifacts as JSON; includes the contents (base64) of the regular files that
// can be returned. The provider applies the same rules again: this output is untrusted.
'use strict';
const fs = require('fs');
const [count, limit] = [Number(process.argv[1]), Number(process.argv[2])];
const allowed = process.argv[3].split(',');
const root = '/workspace/artifacts';
let sent = 0;
const out = fs.readdirSync(root).sort().map((name) => {
  const st = fs.lstatSync(root + '/' + name);
  const entry = { name, size: st.size, regular: st.isFile() };
  const ext = name.includes('.') ? name.split('.').pop().toLowerCase() : '';
  if (entry.regular && st.size > 0 && st.size <= limit && allowed.includes(ext) && sent < count) {
    entry.data = fs.readFileSync(root + '/' + name).toString('base64');
    sent += 1;
  }
  return entry;
});
process.stdout.write(JSON.stringify(out));
