"""kernel_util.py — starting qh's Jupyter kernel with the real client
(jupyter_client) for the kernel tests: the kernel spec written by
`qh --install-kernel --prefix TMP` (so that is tested too), one kernel per
test group, and running a cell while collecting its iopub messages.

Exits 77 (meson's "skipped") where the kernel or the client is missing."""
import json
import os
import subprocess
import sys
import tempfile
import time

# The kernels these tests start inherit the environment: under a TSan build,
# libzmq's hand-offs (not instrumented) are suppressed as tsan.supp says.
_supp = "suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "tsan.supp")
os.environ["TSAN_OPTIONS"] = (os.environ["TSAN_OPTIONS"] + ":" + _supp) if os.environ.get("TSAN_OPTIONS") else _supp


def skip(why):
    print("skipped:", why)
    sys.exit(77)


def need_client():
    try:
        import jupyter_client  # noqa: F401
    except ImportError:
        skip("python3-jupyter-client is not installed (apt-get install python3-jupyter-client)")


def install_spec(qh, interrupt_mode="message"):
    """A temporary Jupyter data folder holding qh's kernel spec; returns its path."""
    tmp = tempfile.mkdtemp(prefix="qh-kernel-")
    r = subprocess.run([qh, "--install-kernel", "--prefix", tmp], capture_output=True, text=True)
    if r.returncode == 2 and "built without" in r.stderr:
        skip("qh was built without the Jupyter kernel")
    if r.returncode != 0:
        sys.exit("qh --install-kernel failed: %s" % r.stderr)
    spec_dir = os.path.join(tmp, "share", "jupyter", "kernels", "qh")
    path = os.path.join(spec_dir, "kernel.json")
    spec = json.load(open(path))
    assert spec["argv"][1:] == ["--kernel", "{connection_file}"], spec
    assert os.path.realpath(spec["argv"][0]) == os.path.realpath(qh), spec
    if interrupt_mode != "message":
        spec["interrupt_mode"] = interrupt_mode
        json.dump(spec, open(path, "w"))
    return os.path.join(tmp, "share", "jupyter")


class Kernel:
    """One running kernel and a client on it."""

    def __init__(self, qh, interrupt_mode="message", extra_args=()):
        need_client()
        from jupyter_client import KernelManager
        os.environ["JUPYTER_PATH"] = install_spec(qh, interrupt_mode)
        self.log = tempfile.NamedTemporaryFile(prefix="qh-kernel-log-", delete=False)
        self.km = KernelManager(kernel_name="qh")
        if extra_args:
            self.km.kernel_spec.argv[1:1] = list(extra_args)
        self.km.start_kernel(stderr=self.log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=30)

    def stderr(self):
        self.log.flush()
        return open(self.log.name, errors="replace").read()

    def iopub_until_idle(self, msg_id, timeout=30, others=None):
        """The iopub messages of request msg_id up to its idle status (others:
        a list for the messages of other parents seen meanwhile)."""
        out = []
        deadline = time.time() + timeout
        while True:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
            if m["parent_header"].get("msg_id") != msg_id:
                if others is not None:
                    others.append(m)
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return out
            if m["msg_type"] != "status":
                out.append(m)

    def reply(self, msg_id, timeout=30):
        while True:
            r = self.kc.get_shell_msg(timeout=timeout)
            if r["parent_header"].get("msg_id") == msg_id:
                return r

    def run(self, code, timeout=30, **kw):
        """(iopub messages as (type, content), the execute_reply content)."""
        msg_id = self.kc.execute(code, **kw)
        msgs = self.iopub_until_idle(msg_id, timeout)
        rep = self.reply(msg_id, timeout)
        return [(m["msg_type"], m["content"]) for m in msgs], rep["content"]

    def request(self, method, *args, **kw):
        msg_id = getattr(self.kc, method)(*args, **kw)
        return self.reply(msg_id)["content"]

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)


def outputs(msgs, kind=None):
    return [c for t, c in msgs if kind is None or t == kind]


def text_of(content):
    return content["data"]["text/plain"]
