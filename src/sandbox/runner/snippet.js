// sandbox-console main() wrapper for services that run a snippet in a long-lived JavaScript
// interpreter with top-level await (AgentRun contexts, E2B kernels). The job travels as base64
// JSON: arguments are never pasted into source code. The user's code runs in its own async
// function scope; main(arguments) is called and awaited; the result goes to stdout as
// "\n" + marker + base64(JSON envelope) + "\n" after everything the code printed.
await (async (jobB64) => {
  const decode = (b64) => new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  const encode = (text) => {
    const bytes = new TextEncoder().encode(text);
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary);
  };
  const job = JSON.parse(decode(jobB64));
  let envelope = '{"present":false,"artifacts":[]}';
  const fail = (error, name) => {
    const message = String(error);
    envelope = JSON.stringify({ present: false, error: message, name, artifacts: [] });
  };
  try {
    const AsyncFunction = (async () => {}).constructor;
    const module = { exports: {} };
    const load = new AsyncFunction('require', 'module', 'exports',
      job.code + '\n;return typeof main === "function" ? main : undefined;');
    const found = await load(typeof require === 'function' ? require : undefined, module, module.exports);
    const exported = module.exports;
    const main = found || (typeof exported === 'function' ? exported : exported && exported.main);
    if (typeof main === 'function') {
      const value = await main(job.arguments);
      const text = value === undefined ? undefined : JSON.stringify(value);
      if (value === undefined) {
        console.error('main() must return a value. Use null for an empty result.');
        fail('main() must return a value. Use null for an empty result.', 'TypeError');
      } else if (text === undefined) {
        console.error('main() returned a value that is not JSON-serializable (' + typeof value + ')');
        fail('main() returned a value that is not JSON-serializable (' + typeof value + ')', 'TypeError');
      } else {
        envelope = '{"present":true,"value":' + text + ',"artifacts":[]}';
      }
    }
  } catch (error) {
    console.error(error && error.stack ? error.stack : String(error));
    fail(error && error.name ? error.name + ': ' + error.message : error, (error && error.name) || 'Error');
  }
  console.log('\n' + job.marker + encode(envelope));
})('__SANDBOX_JOB__');
