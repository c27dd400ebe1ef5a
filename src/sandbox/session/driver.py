# sandbox-console session driver for Python: one long-lived interpreter inside a sandbox.
# Started as `python3 -I -B -c <this file>`. Requests come as JSON lines on stdin; answers go
# as JSON lines on the stdout it was started with, which only this driver writes to: file
# descriptors 1 and 2 are pipes it reads itself, so whatever the cells or their subprocesses
# print comes back as "stdout"/"stderr" events, in order per stream. Every request ends with
# one "done" event. SIGINT interrupts the cell (KeyboardInterrupt) and the driver answers again.
import ast, base64, codecs, io, json, os, shutil, signal, stat, subprocess, sys, threading, time

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
_lock = threading.Lock()


def _send(event):
    line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    with _lock:
        _proto.write(line + "\n")
        _proto.flush()


class _Reader(threading.Thread):
    # Reads one of the redirected descriptors and turns what it reads into events. A token
    # written after a request marks where that request's output ends.
    def __init__(self, kind, fd):
        super().__init__(daemon=True)
        self.kind, self.fd = kind, fd
        self.token, self.seen = None, threading.Event()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending = b""

    def run(self):
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return
            self.pending += chunk
            token = self.token
            if token is not None and token in self.pending:
                before, _, after = self.pending.partition(token)
                self._emit(before, final=True)
                self.pending = after
                self.token = None
                self.seen.set()
            elif token is None or len(self.pending) > len(token):
                keep = len(token) - 1 if token else 0
                cut = len(self.pending) - keep
                self._emit(self.pending[:cut], final=False)
                self.pending = self.pending[cut:]

    def _emit(self, data, final):
        text = self.decoder.decode(data, final=final)
        if text:
            _send({"t": self.kind, "text": text, "ts": time.time_ns()})

    def sync(self, fd, timeout=5.0):
        self.token = b"\x00\x1esandbox-sync-%d\x1e\x00" % time.time_ns()
        self.seen.clear()
        os.write(fd, self.token)
        self.seen.wait(timeout)


_readers = []


def _drain():
    # Everything printed so far becomes events before what comes next (a result, an error,
    # the end of the request).
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        for reader, fd in _readers:
            reader.sync(fd)
    except KeyboardInterrupt:
        pass


def _redirect():
    readers = _readers
    for kind, fd in (("stdout", 1), ("stderr", 2)):
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        reader = _Reader(kind, r)
        reader.start()
        readers.append((reader, fd))
    # Line-buffered, as a notebook shows output: a print comes back as one chunk, and what is
    # left without a newline comes at the end of the request (or when the buffer fills).
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    return readers


_ENV = "/opt/sandbox-env"


def _use_environment():
    packages = _ENV + "/python"
    if os.path.isdir(packages):
        sys.path.insert(1, packages)
    prepared, target = _ENV + "/mplconfig", os.environ.get("MPLCONFIGDIR")
    if target and os.path.isdir(prepared) and not os.path.exists(target):
        try:
            shutil.copytree(prepared, target)
        except OSError:
            pass


# Each code context has its globals; "default" is the one a caller gets without asking.
_scopes = {}
_count = 0


def _scope(context):
    if context not in _scopes:
        _scopes[context] = {"__name__": "__main__", "__builtins__": __builtins__}
    return _scopes[context]


def _bundle(value):
    # A value as a MIME bundle, as a notebook shows it: its repr, and a PNG when it draws one.
    bundle = {"text": repr(value)}
    figure = getattr(value, "savefig", None)
    if callable(figure):
        buffer = io.BytesIO()
        figure(buffer, format="png")
        bundle["png"] = base64.b64encode(buffer.getvalue()).decode("ascii")
    for method, key in (("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
                        ("_repr_png_", "png"), ("_repr_latex_", "latex"), ("_repr_json_", "json")):
        fn = getattr(value, method, None)
        if callable(fn) and key not in bundle:
            try:
                out = fn()
            except Exception:
                continue
            if out is None:
                continue
            if isinstance(out, bytes):
                out = base64.b64encode(out).decode("ascii")
            bundle[key] = out
    return bundle


def _open_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    shown = []
    try:
        for number in plt.get_fignums():
            shown.append(_bundle(plt.figure(number)))
        plt.close("all")
    except Exception as e:
        sys.stderr.write("could not render the open figures: %s\n" % e)
    return shown


def _cell(request):
    global _count
    _count += 1
    ok, main = True, None
    scope = _scope(request.get("context") or "default")
    try:
        tree = ast.parse(request["code"], "<cell>", "exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), scope)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), scope)
            if value is not None:
                scope["_"] = value
                main = _bundle(value)
    except BaseException as error:
        ok = False
        _drain()
        import traceback
        if isinstance(error, SystemExit):
            name, value = "SystemExit", str(error.code)
        else:
            name, value = type(error).__name__, str(error)
        lines = traceback.format_exception(type(error), error, error.__traceback__.tb_next)
        _send({"t": "error", "name": name, "value": value, "traceback": "".join(lines)})
    _drain()
    for bundle in _open_figures():
        _send({"t": "result", "data": bundle, "main": False})
    if main is not None:
        _send({"t": "result", "data": main, "main": True})
    return {"ok": ok, "count": _count}


def _resolve(path):
    return os.path.join(os.getcwd(), path) if not os.path.isabs(path) else path


def _entry(path):
    info = os.lstat(path)
    kind = "dir" if stat.S_ISDIR(info.st_mode) else "symlink" if stat.S_ISLNK(info.st_mode) else "file"
    return {"name": os.path.basename(path.rstrip("/")) or "/", "path": path, "type": kind,
            "size": info.st_size, "mode": stat.S_IMODE(info.st_mode), "mtime": int(info.st_mtime)}


def _files(request):
    op, path = request["op"], _resolve(request.get("path", "."))
    if op == "write":
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(request["data"]))
        return {"entry": _entry(path)}
    if op == "read":
        with open(path, "rb") as f:
            return {"data": base64.b64encode(f.read()).decode("ascii")}
    if op == "list":
        depth, found = max(1, int(request.get("depth", 1))), []
        def walk(folder, level):
            for name in sorted(os.listdir(folder)):
                full = os.path.join(folder, name)
                found.append(_entry(full))
                if level < depth and os.path.isdir(full) and not os.path.islink(full):
                    walk(full, level + 1)
        walk(path, 1)
        return {"entries": found}
    if op == "stat":
        return {"entry": _entry(path)}
    if op == "mkdir":
        if os.path.exists(path):
            raise FileExistsError("path '%s' already exists" % path)
        os.makedirs(path)
        return {"entry": _entry(path)}
    if op == "remove":
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
        return {}
    if op == "move":
        target = _resolve(request["destination"])
        os.rename(path, target)
        return {"entry": _entry(target)}
    raise ValueError("unknown operation %r" % op)


def _command(request):
    env = dict(os.environ)
    env.update(request.get("env") or {})
    try:
        done = subprocess.run(request["argv"], cwd=_resolve(request.get("cwd") or "."), env=env,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=request.get("timeout") or None)
        return {"exit_code": done.returncode, "stdout": base64.b64encode(done.stdout).decode("ascii"),
                "stderr": base64.b64encode(done.stderr).decode("ascii"), "timed_out": False}
    except subprocess.TimeoutExpired as e:
        return {"exit_code": -1, "stdout": base64.b64encode(e.stdout or b"").decode("ascii"),
                "stderr": base64.b64encode(e.stderr or b"").decode("ascii"), "timed_out": True}


def _main():
    _redirect()
    _use_environment()
    os.environ.setdefault("MPLBACKEND", "Agg")
    _send({"t": "ready", "pid": os.getpid()})
    stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    while True:
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        answer = {"t": "done"}
        try:
            request = json.loads(line)
            if request["op"] == "cell":
                answer.update(_cell(request))
            elif request["op"] == "command":
                answer.update(_command(request))
            elif request["op"] == "reset":
                _scopes.pop(request.get("context") or "default", None)
            else:
                answer.update(_files(request))
        except KeyboardInterrupt:
            answer.update({"ok": False, "interrupted": True})
        except (OSError, ValueError, KeyError) as error:
            kind = "not_found" if isinstance(error, FileNotFoundError) else \
                "already_exists" if isinstance(error, FileExistsError) else "invalid"
            answer.update({"failed": kind, "message": str(error)})
        _drain()
        _send(answer)


signal.signal(signal.SIGINT, signal.default_int_handler)
_main()
