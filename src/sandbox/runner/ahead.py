# sandbox-console started-ahead boot _ahead.py (python3 -I -B -u -c <this>): the program of
# a sandbox started before its run, in its workspace. It serves exactly one run, then exits.
# 1. stdin, first line: {"runner": source of the main() runner, "preload": [module, ...]}.
#    It sets the package environment up as the runner does, imports the preloaded modules
#    (what they print on stderr is kept apart) and says so on stdout with one line:
#    READY + {"failed": {module: error}, "ms": n}.
# 2. Then it waits for the rest of stdin, the job: {"files": {name: base64}, "flag": ...,
#    "cpu_secs": n}, stdin closed after it. It writes the files, lowers its CPU-time limit to
#    what it has used plus the run's own, and runs the runner in this interpreter, where the
#    preloaded modules are already imported. On the way out it flags on stderr whether
#    ./artifacts holds anything. stdin ending before a job (the sandbox was retired, a run
#    could not wait for the imports, or its console is gone) ends it at once, imports or not:
#    the rest of stdin is read by a thread of its own beside them.
import base64, io, json, os, sys, threading, time
_READY = "__SANDBOX_AHEAD_READY__:"
_began = time.monotonic()
_line = sys.stdin.buffer.readline()
if not _line.strip():
    sys.exit(0)
_opening = json.loads(_line)
_runner = {"__name__": "__sandbox_runner__", "__builtins__": __builtins__}
exec(compile(_opening["runner"], "_runner.py", "exec"), _runner)
del _line
_job_bytes = []


def _read_job():
    _data = sys.stdin.buffer.read()
    if not _data.strip():
        os._exit(0)
    _job_bytes.append(_data)


_reader = threading.Thread(target=_read_job, daemon=True)
_reader.start()
_runner["_use_environment"]()
_failed = {}
_stderr, sys.stderr = sys.stderr, io.StringIO()
try:
    for _name in _opening["preload"]:
        try:
            __import__(_name)
        except BaseException as _e:
            _failed[_name] = ("%s: %s" % (type(_e).__name__, _e))[:500]
finally:
    sys.stderr = _stderr
del _opening
sys.stdout.write(_READY + json.dumps({"failed": _failed, "ms": int((time.monotonic() - _began) * 1000)}) + "\n")
sys.stdout.flush()

_reader.join()
_job = json.loads(_job_bytes.pop())
del _reader, _read_job, _job_bytes
import resource
_usage = resource.getrusage(resource.RUSAGE_SELF)
_cap = int(_usage.ru_utime + _usage.ru_stime) + 1 + int(_job["cpu_secs"])
_soft, _hard = resource.getrlimit(resource.RLIMIT_CPU)
if _hard == resource.RLIM_INFINITY or _cap + 1 <= _hard:
    resource.setrlimit(resource.RLIMIT_CPU, (_cap, _cap + 1))
for _name, _bytes in _job["files"].items():
    with open(_name, "wb") as _f:
        _f.write(base64.b64decode(_bytes))
sys.argv = ["_runner.py", "_input.json"]
try:
    _runner["_whole_streams"]()
    _runner["_run"]()
finally:
    try:
        if os.listdir("artifacts"):
            sys.stdout.flush()
            sys.stderr.write("\n" + _job["flag"] + "\n")
            sys.stderr.flush()
    except OSError:
        pass
