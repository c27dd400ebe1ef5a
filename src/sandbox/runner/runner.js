// sandbox-console main() runner for JavaScript. Usage: node _runner.js _input.json
// The input file holds {"marker": ..., "arguments": {...}}: arguments never touch argv or
// source code. main.js is the user's code with one line appended that exposes a top-level
// `main`; it is called as main(arguments), sync or async. The result goes to stdout as
// "\n" + marker + base64(JSON envelope) + "\n", after everything the code printed.
'use strict';
const fs = require('fs');

const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
fs.unlinkSync(process.argv[2]);
fs.mkdirSync('artifacts', { recursive: true });
process.argv = [process.argv[0], 'main.js'];

function emit(envelope) {
  const line = Buffer.from(envelope, 'utf8').toString('base64');
  process.stdout.write('\n' + job.marker + line + '\n');
}

function fail(message) {
  console.error(message);
  emit(JSON.stringify({ present: false, error: message }));
  process.exitCode = 1;
}

// The error with only the user's own frames (main.js), as Python's tracebacks are trimmed
// to main.py: the runner's and Node's internal frames say nothing about the code.
function report(error) {
  const stack = error && error.stack ? String(error.stack) : String(error);
  const lines = stack.split('\n').filter((line) => !/^\s+at /.test(line) || line.includes('main.js'));
  console.error(lines.join('\n'));
  process.exitCode = 1;
}

(async () => {
  let exported;
  try {
    exported = require('./main.js');
  } catch (error) {
    return report(error);
  }
  const main = typeof exported === 'function' ? exported : exported && (exported.__sandboxMain || exported.main);
  if (typeof main !== 'function') return; // a plain script: it already ran
  let value;
  try {
    value = await main(job.arguments);
  } catch (error) {
    return report(error);
  }
  if (value === undefined) return fail('main() must return a value. Use null for an empty result.');
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return fail('main() returned a value that is not JSON-serializable: ' + error.message);
  }
  if (text === undefined) return fail('main() returned a value that is not JSON-serializable (' + typeof value + ')');
  emit('{"present":true,"value":' + text + '}');
})();
