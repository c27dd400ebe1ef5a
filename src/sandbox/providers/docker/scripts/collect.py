# sandbox-console artifact collector: python3 -I -c <this> MAX_COUNT MAX_BYTES EXTENSIONS.
# Lists /workspace/artifacts as JSON; includes the contents (base64) of the regular files that
# can be returned. The provider applies the same rules again: this output is untrusted.
import base64, json, os, stat, sys
count, limit, allowed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
root, out, sent = "/workspace/artifacts", [], 0
for name in sorted(os.listdir(root)):
    st = os.lstat(os.path.join(root, name))
    entry = {"name": name, "size": st.st_size, "regular": stat.S_ISREG(st.st_mode)}
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if entry["regular"] and 0 < st.st_size <= limit and ext in allowed and sent < count:
        with open(os.path.join(root, name), "rb") as f:
            entry["data"] = base64.b64encode(f.read(limit + 1)).decode("ascii")
        sent += 1
    out.append(entry)
sys.stdout.write(json.dumps(out))
