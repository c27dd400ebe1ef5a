# sandbox-console main() runner for Python. Usage: python3 _runner.py _input.json
# The input file holds {"marker": ..., "arguments": {...}}: arguments never touch argv or
# source code. User code (main.py) runs as module "__sandbox__", so an
# `if __name__ == "__main__":` block does not call main() a second time. The result goes to
# stdout as "\n" + marker + base64(JSON envelope) + "\n", after everything the code printed.
import base64, io, json, os, sys
# traceback and asyncio load lazily: most runs need neither, and imports are most of a run's cost.

class _WholeWrites(io.RawIOBase):
    # A raw stream whose write() returns only once every byte is written. Unbuffered streams
    # (python -u, PYTHONUNBUFFERED) hand each write to one os.write(), which may write less
    # (gVisor's exec pipes take 64 KiB at a time) and the rest would be dropped silently.
    def __init__(self, fd):
        self._fd = fd
    def writable(self):
        return True
    def fileno(self):
        return self._fd
    def write(self, data):
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done

def _whole_streams():
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        setattr(sys, name, io.TextIOWrapper(_WholeWrites(fd), encoding=stream.encoding or "utf-8",
                                            errors=stream.errors or "strict", write_through=True))

def _encode(envelope):
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

def _emit(marker, text):
    line = base64.b64encode(text.encode("utf-8")).decode("ascii")
    sys.stdout.flush()
    sys.stdout.write("\n" + marker + line + "\n")
    sys.stdout.flush()

def _fail(marker, message):
    sys.stderr.write(message + "\n")
    _emit(marker, _encode({"present": False, "error": message}))
    sys.exit(1)

_ENV = "/opt/sandbox-env"

def _use_environment():
    # A package environment, when one is mounted: its packages come before the system's (as
    # PYTHONPATH would, which -I ignores), and matplotlib's prepared config (backend, font
    # cache) is copied where matplotlib may write.
    packages = _ENV + "/python"
    if not os.path.isdir(packages) or packages in sys.path:
        return
    sys.path.insert(1, packages)
    prepared = _ENV + "/mplconfig"
    target = os.environ.get("MPLCONFIGDIR")
    if target and os.path.isdir(prepared) and not os.path.exists(target):
        try:
            os.makedirs(target)
            for name in os.listdir(prepared):
                with open(os.path.join(prepared, name), "rb") as src, open(os.path.join(target, name), "wb") as dst:
                    dst.write(src.read())
        except OSError:
            pass

def _save_open_figures():
    # Figures still open when main() returns come back as PNG artifacts, as a notebook shows
    # them. Only when the program imported pyplot itself.
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        for number in plt.get_fignums():
            plt.figure(number).savefig("artifacts/figure-%d.png" % number, format="png")
        plt.close("all")
    except Exception as e:
        sys.stderr.write("could not save the open figures: %s\n" % e)

def _run():
    _use_environment()
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    os.remove(sys.argv[1])
    marker, arguments = job["marker"], job["arguments"]
    os.makedirs("artifacts", exist_ok=True)
    with open("main.py", encoding="utf-8") as f:
        code = compile(f.read(), "main.py", "exec")
    scope = {"__name__": "__sandbox__", "__file__": "main.py", "__builtins__": __builtins__}
    sys.argv = ["main.py"]
    try:
        exec(code, scope)
        main = scope.get("main")
        if not callable(main):
            _save_open_figures()
            return
        value = main(**arguments)
        if hasattr(value, "__await__"):
            import asyncio
            value = asyncio.run(value)
    except SystemExit:
        raise
    except BaseException as e:
        import traceback
        # Skip this runner's own frame: the traceback starts in the user's code.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        sys.exit(1)
    _save_open_figures()
    try:
        text = _encode({"present": True, "value": value})
    except (TypeError, ValueError):
        _fail(marker, "main() returned a value that is not JSON-serializable (%s)" % type(value).__name__)
    _emit(marker, text)

# Run as a program (or by the docker boot) it runs the job; a started-ahead sandbox's boot
# (ahead.py) loads it under another name and calls these itself once its job arrives.
if __name__ == "__main__":
    _whole_streams()
    _run()
