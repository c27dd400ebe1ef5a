# sandbox-console session host, for sessions on the kubernetes provider. The pod's runtime only
# runs commands to their end (POST /execute), so a session's long-lived interpreter (the
# session driver) is kept by this host, started once and then spoken to by short calls:
#
#   python3 .sandbox-console-host.py start   reads .sandbox-console-driver.json
#       ({"argv": [...], "home": "..."}), starts the driver there (HOME and working folder),
#       detaches (its own session, no inherited descriptors) and prints {"ok", "home"} once the
#       host listens on .sandbox-console.sock, or {"ok": false, "error"}.
#   python3 .sandbox-console-host.py call FILE   sends the request in FILE (then removes it):
#       {"op": "send", "line"}        one request line to the driver's stdin;
#       {"op": "events", "after", "wait"}   the driver's output lines numbered after `after`
#                                     (those up to `after` are forgotten), waiting up to `wait`
#                                     seconds for one; "exited" once the driver is gone and all
#                                     was read;
#       {"op": "interrupt"}           SIGINT to the driver (its cell stops, it answers again);
#       {"op": "kill"}                the driver and the host end.
#     and prints the host's one-line answer.
# Lines kept unread are capped (the driver then waits to write); an answer carries at most
# 4 MiB of lines. File names and operations are the console's own; no request data is ever
# on a command line.
import json, os, signal, socket, subprocess, sys, threading, time

SOCKET = ".sandbox-console.sock"
SPEC = ".sandbox-console-driver.json"
MAX_ANSWER = 4 << 20
MAX_KEPT = 64 << 20
# A request or an answer on the socket: a cell or a line of a file (the runtime takes at most
# 64 MiB a file), or MAX_ANSWER of lines.
MAX_LINE = 96 << 20


def read_line(sock):
    """What the peer sends up to a newline (or its end), at most MAX_LINE bytes."""
    data = bytearray()
    while not data.endswith(b"\n") and len(data) <= MAX_LINE:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return bytes(data)


class Host:
    def __init__(self, spec):
        self.home = os.path.abspath(spec["home"])
        os.makedirs(self.home, exist_ok=True)
        env = dict(os.environ, HOME=self.home)
        self.driver = subprocess.Popen(
            spec["argv"], cwd=self.home, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.lines, self.seq, self.kept, self.exited = [], 0, 0, False
        self.changed = threading.Condition()
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(SOCKET):
            os.unlink(SOCKET)
        self.server.bind(SOCKET)
        self.server.listen(16)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for raw in self.driver.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.changed:
                while self.kept > MAX_KEPT:
                    self.changed.wait(1)
                self.seq += 1
                self.lines.append((self.seq, line))
                self.kept += len(line)
                self.changed.notify_all()
        self.driver.wait()
        with self.changed:
            self.exited = True
            self.changed.notify_all()

    def events(self, after, wait):
        deadline = time.monotonic() + max(0.0, min(wait, 60.0))
        with self.changed:
            while self.lines and self.lines[0][0] <= after:
                self.kept -= len(self.lines.pop(0)[1])
            self.changed.notify_all()
            while not self.lines and not self.exited:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            out, size = [], 0
            for seq, line in self.lines:
                if out and size + len(line) > MAX_ANSWER:
                    break
                out.append([seq, line])
                size += len(line)
            return {"ok": True, "events": out, "exited": self.exited and len(out) == len(self.lines)}

    def answer(self, request):
        op = request.get("op")
        if op == "send":
            try:
                self.driver.stdin.write((request["line"] + "\n").encode("utf-8"))
                self.driver.stdin.flush()
            except (BrokenPipeError, ValueError):
                return {"ok": False, "error": "the session's interpreter is gone"}
            return {"ok": True}
        if op == "events":
            return self.events(int(request.get("after", 0)), float(request.get("wait", 0)))
        if op == "interrupt":
            if self.driver.poll() is None:
                os.kill(self.driver.pid, signal.SIGINT)
            return {"ok": True}
        if op == "kill":
            self.driver.kill()
            return {"ok": True}
        return {"ok": False, "error": "unknown operation %r" % (op,)}

    def handle(self, connection):
        with connection:
            connection.settimeout(120)
            try:
                request = json.loads(read_line(connection))
                answer = self.answer(request)
            except Exception as error:
                request, answer = {}, {"ok": False, "error": "a bad request: %s" % error}
            connection.sendall((json.dumps(answer) + "\n").encode("utf-8"))
        if request.get("op") == "kill":
            os._exit(0)

    def serve(self):
        while True:
            connection, _ = self.server.accept()
            threading.Thread(target=self.handle, args=(connection,), daemon=True).start()


def start():
    with open(SPEC) as f:
        spec = json.load(f)
    word_read, word_write = os.pipe()
    if os.fork():
        os.close(word_write)
        word = b""
        while True:
            chunk = os.read(word_read, 65536)
            if not chunk:
                break
            word += chunk
        print(word.decode() or json.dumps({"ok": False, "error": "the session host exited at start"}))
        return
    # The host: a session of its own, outliving the command that started it, holding none of
    # the runtime's pipes (which the runtime reads to their end).
    os.close(word_read)
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        host = Host(spec)
        word = {"ok": True, "home": host.home}
    except Exception as error:
        host, word = None, {"ok": False, "error": "the session could not start: %s" % error}
    os.write(word_write, json.dumps(word).encode())
    os.close(word_write)
    if host is None:
        os._exit(1)
    host.serve()


def call(path):
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(120)
    try:
        client.connect(SOCKET)
        client.sendall(data.rstrip(b"\n") + b"\n")
        answer = read_line(client)
    except OSError as error:
        answer = b""
        print(json.dumps({"ok": False, "gone": True, "error": "the session host is gone: %s" % error}))
        return
    print(answer.decode("utf-8", "replace").strip() or json.dumps({"ok": False, "gone": True, "error": "the session host ended"}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["start"]:
        start()
    elif sys.argv[1:2] == ["call"] and len(sys.argv) == 3:
        call(sys.argv[2])
    else:
        sys.exit("usage: start | call FILE")
