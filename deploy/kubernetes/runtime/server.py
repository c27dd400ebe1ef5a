"""The runtime in each sandbox pod of deploy/kubernetes: the `kubernetes` provider uploads a
program and executes it here, one claim (one pod) per run or per session.

It serves the contract of agent-sandbox's example Python runtime (examples/python-runtime-sandbox)
with the standard library only, so it runs on the same image as the docker provider's runtime
(Debian's python3 and nodejs, nothing else):

  GET  /          {"status": "ok", "message": "Sandbox Runtime is active."}   (readiness)
  POST /upload    multipart/form-data, part `file`, its file name the path under the base
                  folder (parent folders are made) -> {"message": ...}; 403 outside the folder
  POST /execute   {"command": "..."} split as a shell would (no shell runs it), run in the base
                  folder in a session of its own -> {"stdout", "stderr", "exit_code"}, always 200

Beyond the example: the body of a request is capped (SANDBOX_MAX_REQUEST_BYTES, 64 MiB), each
output stream is read up to SANDBOX_MAX_OUTPUT_BYTES (64 MiB) and the program's process group is
killed past it (the caller sees a longer answer than it allows and reports the output limit),
and a program still running after SANDBOX_EXEC_TIMEOUT_SECONDS (300) is killed with its group.
The pod is the sandbox: the programs run as this server's user, in a pod with no service
account token, no network but the console's ingress, under the template's RuntimeClass.
"""

import email.parser
import email.policy
import http.server
import json
import os
import shlex
import signal
import subprocess
import sys
import threading


def setting(name, default):
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


BASE = os.path.realpath(os.environ.get("SANDBOX_BASE_DIR", "").strip() or "/workspace")
PORT = setting("SANDBOX_RUNTIME_PORT", 8888)
TIMEOUT = setting("SANDBOX_EXEC_TIMEOUT_SECONDS", 300)
MAX_REQUEST = setting("SANDBOX_MAX_REQUEST_BYTES", 64 << 20)
MAX_OUTPUT = setting("SANDBOX_MAX_OUTPUT_BYTES", 64 << 20)


def safe_path(name):
    """The path `name` names under the base folder, or None when it would leave it."""
    target = os.path.realpath(os.path.join(BASE, name.lstrip("/")))
    if os.path.commonpath([BASE, target]) != BASE or target == BASE:
        return None
    return target


def drain(stream, into, over, group):
    """Reads `stream` into `into` up to MAX_OUTPUT bytes; past it kills the process group."""
    size = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if size < MAX_OUTPUT:
            into.append(chunk[: MAX_OUTPUT - size + 1])
        size += len(chunk)
        if size > MAX_OUTPUT and not over.is_set():
            over.set()
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass


def execute(command):
    args = shlex.split(command)
    if not args:
        raise ValueError("the command is empty")
    process = subprocess.Popen(
        args,
        cwd=BASE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    outputs, over = ([], []), threading.Event()
    readers = [
        threading.Thread(target=drain, args=(stream, into, over, process.pid), daemon=True)
        for stream, into in zip((process.stdout, process.stderr), outputs)
    ]
    for reader in readers:
        reader.start()
    try:
        code = process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        code = process.wait()
    # Whatever the program left behind in its group goes with it.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for reader in readers:
        reader.join()
    stdout, stderr = (b"".join(parts).decode("utf-8", "replace") for parts in outputs)
    return {"stdout": stdout, "stderr": stderr, "exit_code": code}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sandbox-runtime"
    sys_version = ""
    # A client that stops sending mid-request is dropped after this many seconds.
    timeout = 60

    def log_message(self, format, *args):
        sys.stderr.write("%s %s\n" % (self.command, format % args))

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.answer(411, {"message": "A Content-Length is required."})
            return None
        if int(length) > MAX_REQUEST:
            self.answer(413, {"message": f"The request is over {MAX_REQUEST} bytes."})
            self.close_connection = True
            return None
        return self.rfile.read(int(length))

    def do_GET(self):
        if self.path == "/":
            self.answer(200, {"status": "ok", "message": "Sandbox Runtime is active."})
        else:
            self.answer(404, {"message": "Not found"})

    def do_POST(self):
        if self.path == "/execute":
            self.post_execute()
        elif self.path == "/upload":
            self.post_upload()
        else:
            self.answer(404, {"message": "Not found"})

    def post_execute(self):
        data = self.body()
        if data is None:
            return
        try:
            command = json.loads(data)["command"]
            if not isinstance(command, str):
                raise TypeError("command is not a string")
        except (ValueError, KeyError, TypeError) as error:
            self.answer(422, {"detail": f"the body must be {{\"command\": \"...\"}}: {error}"})
            return
        try:
            ran = execute(command)
        except Exception as error:  # the example runtime's answer for any failure
            ran = {"stdout": "", "stderr": f"Failed to execute command: {error}", "exit_code": 1}
        self.answer(200, ran)

    def post_upload(self):
        data = self.body()
        if data is None:
            return
        head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + data)
        part = None
        if message.is_multipart():
            for candidate in message.iter_parts():
                if candidate.get_param("name", header="content-disposition") == "file":
                    part = candidate
                    break
        if part is None or not part.get_filename():
            self.answer(422, {"detail": "a multipart part `file` with a file name is required"})
            return
        name = part.get_filename()
        target = safe_path(name)
        if target is None:
            self.answer(403, {"message": "Access denied"})
            return
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(part.get_payload(decode=True) or b"")
        except OSError as error:
            self.answer(500, {"message": f"File upload failed: {error}"})
            return
        self.answer(200, {"message": f"File '{name}' uploaded successfully."})


def main():
    os.makedirs(BASE, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("0.0.0.0", PORT), Handler)
    server.daemon_threads = True
    print(f"sandbox runtime on :{PORT}, base {BASE}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
