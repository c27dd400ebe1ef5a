# sandbox-console wrapper for RAGFlow's executor manager, whose runner imports `main` from this
# file and calls main(**arguments). This main runs the user's code (base64 below, never pasted
# as source) in its own namespace, so plain scripts and async main() work as on every other
# provider: a script without main() exits 0 before the runner prints a result, a coroutine is
# awaited, and the run's own deadline ends the process with the executor's time-out code 124.
import base64 as _sandbox_base64

_SANDBOX_JOB = "__SANDBOX_JOB__"


def main(**arguments):
    import asyncio, json, os, sys, threading

    job = json.loads(_sandbox_base64.b64decode(_SANDBOX_JOB).decode("utf-8"))
    if job.get("deadline_secs"):
        watchdog = threading.Timer(job["deadline_secs"], lambda: os._exit(124))
        watchdog.daemon = True
        watchdog.start()
    scope = {"__name__": "__sandbox__", "__file__": "main.py", "__builtins__": __builtins__}
    exec(compile(job["code"], "main.py", "exec"), scope)
    user_main = scope.get("main")
    if not callable(user_main):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    value = user_main(**arguments)
    if hasattr(value, "__await__"):
        value = asyncio.run(value)
    return value
