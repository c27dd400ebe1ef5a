# Drives a console with E2B's own SDK, unmodified, from PyPI (tests/clients/requirements.txt):
# E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY come from the test. Prints "ok <step>" after
# each step; any failed check raises, and the test shows what this printed.
import sys
import time

import e2b
from e2b_code_interpreter import Sandbox


def step(name):
    print("ok", name, flush=True)


sbx = Sandbox.create(timeout=120)
other = Sandbox.create(timeout=120)
step("create")

first = sbx.run_code("x = 41")
assert first.error is None, first.error
second = sbx.run_code("x + 1")
assert second.text == "42", second
assert second.execution_count == 2, second.execution_count
step("state kept")

seen = []
printed = sbx.run_code("print('hello'); import sys; print('oops', file=sys.stderr)", on_stdout=lambda m: seen.append(m.line))
assert printed.logs.stdout == ["hello\n"], printed.logs
assert printed.logs.stderr == ["oops\n"], printed.logs
assert seen == ["hello\n"], seen
failed = sbx.run_code("1 / 0")
assert failed.error is not None and failed.error.name == "ZeroDivisionError", failed.error
step("output and errors")

figure = sbx.run_code(
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
)
assert figure.error is None, figure.error
pngs = [r.png for r in figure.results if r.png]
assert pngs and pngs[0].startswith("iVBORw0KGgo"), figure.results
step("matplotlib png")

sbx.files.write("/home/user/hello.txt", "hello world\n")
assert sbx.files.read("/home/user/hello.txt") == "hello world\n"
sbx.files.write("blob.bin", b"\x00\x01\x02\xff")
assert bytes(sbx.files.read("blob.bin", format="bytes")) == b"\x00\x01\x02\xff"
names = sorted(entry.name for entry in sbx.files.list("/home/user"))
assert "hello.txt" in names and "blob.bin" in names, names
assert sbx.files.exists("hello.txt")
sbx.files.remove("hello.txt")
assert not sbx.files.exists("hello.txt")
try:
    sbx.files.read("/home/user/nope.txt")
    raise AssertionError("reading a missing file must fail")
except e2b.NotFoundException:
    pass
read_back = sbx.run_code("open('blob.bin', 'rb').read()")
assert read_back.text == "b'\\x00\\x01\\x02\\xff'", read_back.text
step("files")

hi = sbx.commands.run("echo hi")
assert hi.stdout == "hi\n" and hi.exit_code == 0, hi
try:
    sbx.commands.run("echo out; echo err 1>&2; exit 7")
    raise AssertionError("a failing command must raise")
except e2b.CommandExitException as failure:
    assert failure.exit_code == 7, failure
    assert failure.stdout == "out\n" and failure.stderr == "err\n", failure
step("commands")

started = time.monotonic()
try:
    sbx.run_code("import time\nwhile True:\n    time.sleep(0.05)", timeout=2)
    raise AssertionError("a cell past its timeout must raise")
except e2b.TimeoutException:
    pass
after = sbx.run_code("x")
assert after.text == "41", after
step("timeout then the next cell")

assert other.run_code("'x' in globals()").text == "False"
assert not other.files.exists("blob.bin")
step("isolated")

listed = [info.sandbox_id for info in Sandbox.list().next_items()]
assert sorted(listed) == sorted([sbx.sandbox_id, other.sandbox_id]), listed
step("list")

sbx.set_timeout(60)
assert sbx.get_info().sandbox_id == sbx.sandbox_id
step("info and timeout")

assert sbx.kill() is True
assert Sandbox.kill(sbx.sandbox_id) is False
other.kill()
step("kill")

try:
    Sandbox.create(api_key="sk-wrong-key")
    raise AssertionError("a wrong key must be refused")
except e2b.AuthenticationException:
    pass
step("wrong key")
