# sandbox-console main() wrapper for services that run a snippet in a long-lived interpreter
# (AgentRun contexts, E2B's Jupyter kernels). The job travels as base64 JSON, so arguments are
# never pasted into source code. The user's code runs in its own namespace in a fresh folder
# (./artifacts/ inside it); main(**arguments) is called, a coroutine is awaited (in a thread
# when the kernel's own event loop runs here); the result goes to stdout as
# "\n" + marker + base64(JSON envelope) + "\n" after everything the code printed. Nothing of the
# run is left in the interpreter: names, folder, working directory and memory limit are restored.
def __sandbox_console_run(job_b64):
    import base64, json, os, shutil, stat, sys, tempfile

    job = json.loads(base64.b64decode(job_b64).decode("utf-8"))

    def wait_for(coroutine):
        import asyncio, threading
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        box = {}

        def target():
            try:
                box["value"] = asyncio.run(coroutine)
            except BaseException as e:
                box["error"] = e

        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def limit_memory(extra):
        # RLIMIT_DATA caps what this run may allocate on top of what the interpreter already
        # uses: a hog gets MemoryError instead of taking the whole sandbox down.
        try:
            import resource
            before = resource.getrlimit(resource.RLIMIT_DATA)
            used = 0
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmData:"):
                        used = int(line.split()[1]) * 1024
            soft = used + extra
            if before[1] != resource.RLIM_INFINITY and soft > before[1]:
                return None
            resource.setrlimit(resource.RLIMIT_DATA, (soft, before[1]))
            return lambda: resource.setrlimit(resource.RLIMIT_DATA, before)
        except Exception:
            return None

    def collect(folder, rules):
        items, sent = [], 0
        for name in sorted(os.listdir(folder)):
            info = os.lstat(os.path.join(folder, name))
            item = {"name": name, "regular": stat.S_ISREG(info.st_mode), "size": info.st_size}
            extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if (item["regular"] and 0 < info.st_size <= rules["max_bytes"]
                    and extension in rules["extensions"] and not name.startswith(".")
                    and sent < rules["max_count"]):
                with open(os.path.join(folder, name), "rb") as f:
                    item["content_b64"] = base64.b64encode(f.read()).decode("ascii")
                sent += 1
            items.append(item)
        return items

    envelope = {"present": False}
    home = os.getcwd()
    work = tempfile.mkdtemp(prefix="sandbox-console-")
    os.makedirs(os.path.join(work, "artifacts"))
    restore = limit_memory(job["memory_bytes"]) if job.get("memory_bytes") else None
    os.chdir(work)
    try:
        scope = {"__name__": "__sandbox__", "__file__": "main.py", "__builtins__": __builtins__}
        exec(compile(job["code"], "main.py", "exec"), scope)
        main = scope.get("main")
        if callable(main):
            value = main(**job["arguments"])
            if hasattr(value, "__await__"):
                value = wait_for(value)
            envelope = {"present": True, "value": value}
    except BaseException as e:
        if not (isinstance(e, SystemExit) and e.code in (None, 0)):
            import traceback
            # Skip this wrapper's own frame: the traceback starts in the user's code.
            traceback.print_exception(type(e), e, e.__traceback__.tb_next)
            envelope = {"present": False, "name": type(e).__name__,
                        "error": "".join(traceback.format_exception_only(type(e), e)).strip()}
    finally:
        os.chdir(home)
        if restore:
            restore()
    try:
        envelope["artifacts"] = collect(os.path.join(work, "artifacts"), job["artifacts"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        message = "main() returned a value that is not JSON-serializable (%s)" % type(envelope.get("value")).__name__
        sys.stderr.write(message + "\n")
        text = json.dumps({"present": False, "error": message, "artifacts": envelope["artifacts"]})
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write("\n" + job["marker"] + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\n")
    sys.stdout.flush()


__sandbox_console_run("__SANDBOX_JOB__")
del __sandbox_console_run
