// sandbox-console wrapper for RAGFlow's executor manager, whose runner requires this file and
// calls main(arguments). This main runs the user's code (base64 below, never pasted as source)
// in its own async function scope, so plain scripts and async main() work as on every other
// provider: a script without main() never settles, so the runner prints no result and Node
// exits 0 once its output is written (process.exit() could cut piped output short), and the
// run's own deadline ends the process with the executor's time-out code 124.
const sandboxJob = JSON.parse(Buffer.from('__SANDBOX_JOB__', 'base64').toString('utf8'));

async function main(args) {
  if (sandboxJob.deadline_secs) setTimeout(() => process.exit(124), sandboxJob.deadline_secs * 1000).unref();
  const AsyncFunction = (async () => {}).constructor;
  const userModule = { exports: {} };
  const load = new AsyncFunction('require', 'module', 'exports',
    sandboxJob.code + '\n;return typeof main === "function" ? main : undefined;');
  const found = await load(require, userModule, userModule.exports);
  const exported = userModule.exports;
  const userMain = found || (typeof exported === 'function' ? exported : exported && exported.main);
  if (typeof userMain !== 'function') return new Promise(() => {});
  return await userMain(args);
}

module.exports = { main };
