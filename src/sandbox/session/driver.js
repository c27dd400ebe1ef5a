// sandbox-console session driver for JavaScript: one long-lived Node inside a sandbox.
// Started as `node -e <this file>`. Requests come as JSON lines on stdin; answers go as JSON
// lines on stdout. What cells print (process.stdout/stderr, console) comes back as "stdout"/
// "stderr" events; every request ends with one "done" event. Cells run as scripts in this
// context (top-level declarations persist, `require` is there), each code context in its own
// vm context; SIGINT interrupts a cell (vm's breakOnSigint) and the driver answers again.
'use strict';
const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const childProcess = require('child_process');

const realWrite = process.stdout.write.bind(process.stdout);
// One stream for everything the host reads, in order (what cells print and the answers).
function send(event) {
  realWrite(JSON.stringify(event) + '\n');
}
function capture(kind) {
  return (chunk, encoding, callback) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text) send({ t: kind, text, ts: Number(process.hrtime.bigint()) });
    if (typeof encoding === 'function') encoding();
    else if (typeof callback === 'function') callback();
    return true;
  };
}
process.stdout.write = capture('stdout');
process.stderr.write = capture('stderr');
process.on('SIGINT', () => {});

const contexts = new Map();
function contextOf(id) {
  if (!contexts.has(id)) {
    const sandbox = { require, console, process, Buffer, setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, URL, TextEncoder, TextDecoder };
    sandbox.globalThis = sandbox;
    contexts.set(id, vm.createContext(sandbox));
  }
  return contexts.get(id);
}

let count = 0;
function bundle(value) {
  return { text: typeof value === 'string' ? util.inspect(value) : util.inspect(value, { depth: 4 }) };
}

async function cell(request) {
  count += 1;
  let ok = true;
  try {
    const script = new vm.Script(request.code, { filename: '<cell>' });
    let value = script.runInContext(contextOf(request.context || 'default'), { breakOnSigint: true, displayErrors: false });
    if (value && typeof value.then === 'function') value = await value;
    if (value !== undefined) send({ t: 'result', data: bundle(value), main: true });
  } catch (error) {
    ok = false;
    const name = (error && error.name) || 'Error';
    const message = error && error.message !== undefined ? String(error.message) : String(error);
    send({ t: 'error', name, value: message, traceback: (error && error.stack) ? String(error.stack) : `${name}: ${message}` });
  }
  return { ok, count };
}

function resolve(p) {
  return path.isAbsolute(p) ? p : path.join(process.cwd(), p);
}

function entry(p) {
  const info = fs.lstatSync(p);
  const type = info.isDirectory() ? 'dir' : info.isSymbolicLink() ? 'symlink' : 'file';
  return { name: path.basename(p) || '/', path: p, type, size: info.size, mode: info.mode & 0o777, mtime: Math.floor(info.mtimeMs / 1000) };
}

function files(request) {
  const p = resolve(request.path || '.');
  switch (request.op) {
    case 'write':
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, Buffer.from(request.data, 'base64'));
      return { entry: entry(p) };
    case 'read':
      return { data: fs.readFileSync(p).toString('base64') };
    case 'list': {
      const depth = Math.max(1, request.depth || 1);
      const found = [];
      const walk = (folder, level) => {
        for (const name of fs.readdirSync(folder).sort()) {
          const full = path.join(folder, name);
          found.push(entry(full));
          const info = fs.lstatSync(full);
          if (level < depth && info.isDirectory()) walk(full, level + 1);
        }
      };
      walk(p, 1);
      return { entries: found };
    }
    case 'stat':
      return { entry: entry(p) };
    case 'mkdir':
      if (fs.existsSync(p)) { const e = new Error(`path '${p}' already exists`); e.code = 'EEXIST'; throw e; }
      fs.mkdirSync(p, { recursive: true });
      return { entry: entry(p) };
    case 'remove':
      if (!fs.existsSync(p)) { const e = new Error(`ENOENT: no such file or directory, '${p}'`); e.code = 'ENOENT'; throw e; }
      fs.rmSync(p, { recursive: true, force: true });
      return {};
    case 'move': {
      const target = resolve(request.destination);
      fs.renameSync(p, target);
      return { entry: entry(target) };
    }
    case 'reset':
      contexts.delete(request.context || 'default');
      return {};
    default:
      throw new Error(`unknown operation ${request.op}`);
  }
}

function command(request) {
  const [program, ...args] = request.argv;
  const done = childProcess.spawnSync(program, args, {
    cwd: resolve(request.cwd || '.'),
    env: Object.assign({}, process.env, request.env || {}),
    input: '',
    timeout: request.timeout ? Math.ceil(request.timeout * 1000) : undefined,
    maxBuffer: 64 * 1024 * 1024,
  });
  const timedOut = Boolean(done.error && done.error.code === 'ETIMEDOUT');
  const exitCode = done.status === null ? -1 : done.status;
  return {
    exit_code: done.error && !timedOut ? 127 : exitCode,
    stdout: (done.stdout || Buffer.alloc(0)).toString('base64'),
    stderr: done.error && !timedOut ? Buffer.from(String(done.error.message)).toString('base64') : (done.stderr || Buffer.alloc(0)).toString('base64'),
    timed_out: timedOut,
  };
}

async function handle(line) {
  const answer = { t: 'done' };
  try {
    const request = JSON.parse(line);
    if (request.op === 'cell') Object.assign(answer, await cell(request));
    else if (request.op === 'command') Object.assign(answer, command(request));
    else Object.assign(answer, files(request));
  } catch (error) {
    const failed = error.code === 'ENOENT' ? 'not_found' : error.code === 'EEXIST' ? 'already_exists' : 'invalid';
    Object.assign(answer, { failed, message: String(error.message) });
  }
  send(answer);
}

let buffered = '';
let queue = Promise.resolve();
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let at;
  while ((at = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    queue = queue.then(() => handle(line));
  }
});
process.stdin.on('end', () => process.exit(0));
send({ t: 'ready', pid: process.pid });
