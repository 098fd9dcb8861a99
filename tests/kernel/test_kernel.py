#!/usr/bin/env python3
"""test_kernel.py — qh's Jupyter kernel driven by the real client,
jupyter_client: every request (kernel_info, execute with counts, silent and
store_history, complete, inspect, is_complete, history, comm_info,
shutdown, restart), the heartbeat, the order of a cell's outputs, errors
as the command line prints them, interrupts (message and signal modes)
during a long quantum call and a classical loop, a future whose display is
updated in place while a later cell runs, input() through the stdin
channel, and malformed, unsigned and
badly signed messages (dropped and logged; the kernel goes on).

Usage: test_kernel.py PATH/TO/qh       (exit 77: no kernel or no client)"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_util import Kernel, need_client, outputs, text_of  # noqa: E402

QH = os.path.abspath(sys.argv[1])
failures = []


def check(name, cond, detail=""):
    if cond:
        print("ok  ", name)
    else:
        print("FAIL", name, detail)
        failures.append(name)


# quantum calls that take a while: the device's latency, in seconds
SLOW = "".join('qfn slow%s(v) on device("statevector", wires=1, latency=%s) {\n    RX(v, 0)\n'
               '    return round(expval(PauliZ(0)), 6)\n}\n' % (name, t)
               for name, t in [("03", 0.3), ("05", 0.5), ("1", 1.0), ("25", 2.5), ("60", 60)])


def test_basics(k):
    info = k.request("kernel_info")
    check("kernel_info", info["protocol_version"] == "5.3" and info["language_info"]["name"] == "qh"
          and info["implementation"] == "qh" and info["status"] == "ok", info)
    msgs, rep = k.run("1 + 1")
    check("execute 1 + 1", rep["status"] == "ok" and rep["execution_count"] == 1
          and [text_of(c) for c in outputs(msgs, "execute_result")] == ["2"]
          and outputs(msgs, "execute_result")[0]["execution_count"] == 1, (msgs, rep))
    check("execute_input", outputs(msgs, "execute_input") == [{"code": "1 + 1", "execution_count": 1}],
          msgs)
    msgs, rep = k.run("x = 5")
    check("a statement shows nothing", rep["execution_count"] == 2 and outputs(msgs, "execute_result") == [],
          msgs)
    msgs, rep = k.run("x * 3", silent=True)
    check("silent: no outputs, no count", msgs == [] and rep["execution_count"] == 2 and rep["status"] == "ok",
          (msgs, rep))
    msgs, rep = k.run("print(x)", store_history=False)
    check("store_history=False: no count", rep["execution_count"] == 2
          and outputs(msgs, "stream") == [{"name": "stdout", "text": "5\n"}], (msgs, rep))
    msgs, rep = k.run('ue = 21', user_expressions={"double": "ue * 2", "printing": 'print("hidden")\nue',
                                                  "bad": "[][1]", "syntax": "ue +"})
    ue = rep["user_expressions"]
    check("user_expressions", ue["double"] == {"status": "ok", "data": {"text/plain": "42"}, "metadata": {}}
          and ue["printing"]["data"]["text/plain"] == "21" and outputs(msgs, "stream") == []
          and ue["bad"]["status"] == "error" and "out of range" in ue["bad"]["evalue"]
          and ue["syntax"]["status"] == "error" and ue["syntax"]["ename"] == "SyntaxError", (ue, msgs))
    msgs, rep = k.run("x + 1")
    check("the count goes on", rep["execution_count"] == 4 and text_of(outputs(msgs, "execute_result")[0]) == "6",
          (msgs, rep))


def test_streams(k):
    # a warning at analysis (stderr) first, then prints and displays in program order
    code = ('n0 = len([1])\nlen = 3\nfor i in range(3) {\n    print("p", i)\n    display(i * 10)\n}\n'
            'print("end")\n"value"')
    msgs, rep = k.run(code)
    seq = []
    for t, c in msgs:
        if t == "stream":
            for line in c["text"].splitlines():
                seq.append((c["name"], line))
        elif t in ("display_data", "execute_result"):
            seq.append((t, text_of(c)))
    want = [("display_data", "0"), ("display_data", "10"), ("display_data", "20")]
    got_core = [s for s in seq if s[0] != "stderr"]
    want_core = [("stdout", "p 0"), ("display_data", "0"), ("stdout", "p 1"), ("display_data", "10"),
                 ("stdout", "p 2"), ("display_data", "20"), ("stdout", "end"), ("execute_result", "value")]
    check("stream order: prints and displays interleaved", got_core == want_core, seq)
    check("stream order: the warning first, on stderr", seq and seq[0][0] == "stderr" and "warning" in seq[0][1]
          and "len" in seq[0][1], seq)
    del want
    # many writes: one stream after another, nothing lost or reordered
    msgs, rep = k.run('for i in range(2000) { print(i) }')
    text = "".join(c["text"] for c in outputs(msgs, "stream"))
    check("2000 prints in order", text == "".join("%d\n" % i for i in range(2000)), text[:100])
    # a string that is not valid UTF-8 arrives as valid JSON, the bad byte replaced
    msgs, rep = k.run('print("a\\xffb")\n"c\\xffd"')
    check("invalid UTF-8 replaced", outputs(msgs, "stream") == [{"name": "stdout", "text": "a\ufffdb\n"}]
          and text_of(outputs(msgs, "execute_result")[0]) == 'c\ufffdd', msgs)


def test_pictures(k):
    msgs, rep = k.run('h = hist({"00": 3, "11": 1})\nh')
    res = outputs(msgs, "execute_result")
    data = res[0]["data"] if res else {}
    check("a picture's MIME bundle", set(data) == {"text/plain", "image/svg+xml"}
          and data["image/svg+xml"].startswith("<svg") and data["text/plain"].startswith("00 "), data)
    msgs, rep = k.run('display(plot([1, 2, 3]), 5)')
    d = outputs(msgs, "display_data")
    check("display() of a picture and a number", len(d) == 2 and "image/svg+xml" in d[0]["data"]
          and set(d[1]["data"]) == {"text/plain"}, d)


def cli_error(code, name):
    """The command line's stderr for code in a file named name, and its status."""
    d = tempfile.mkdtemp()
    path = os.path.join(d, name)
    open(path, "w").write(code)
    r = subprocess.run([QH, name], cwd=d, capture_output=True, text=True)
    return r.stderr, r.returncode


def test_errors(k):
    code = 'fn f(a) {\n    return a[5]\n}\nprint("before")\nf([1, 2])\nprint("never")'
    msgs, rep = k.run(code)
    n = rep["execution_count"]
    cli, status = cli_error(code, "cell.qh")
    tb = "\n".join(rep.get("traceback", [])) + "\n"
    want = cli.replace("cell.qh", "<cell %d>" % n).replace("<main>", "<main>")
    check("runtime error: the command line's message and traceback", status == 1 and rep["status"] == "error"
          and tb == want, "\n%s---\n%s" % (tb, want))
    err = outputs(msgs, "error")
    check("runtime error published", len(err) == 1 and err[0]["traceback"] == rep["traceback"]
          and err[0]["ename"] == "RuntimeError" and "out of range" in err[0]["evalue"], err)
    check("output before the error", outputs(msgs, "stream") == [{"name": "stdout", "text": "before\n"}], msgs)
    code = "x = (1 +\ny = 2\n"
    msgs, rep = k.run(code)
    n = rep["execution_count"]
    cli, status = cli_error(code, "syn.qh")
    tb = "\n".join(rep.get("traceback", [])) + "\n"
    check("syntax error: the command line's message", status == 2 and rep["status"] == "error"
          and rep["ename"] == "SyntaxError" and tb == cli.replace("syn.qh", "<cell %d>" % n),
          "\n%s---\n%s" % (tb, cli))
    # Run All: after a failed cell the execute requests already queued are aborted
    ids = [k.kc.execute('t0 = clock()\nwhile clock() - t0 < 0.5 { }\n[][1]'),
           k.kc.execute('print("not run")'), k.kc.execute('print("nor this")')]
    reps = [k.reply(i)["content"]["status"] for i in ids]
    check("stop_on_error aborts the queued cells", reps == ["error", "aborted", "aborted"], reps)
    # only what was queued when the cell failed is aborted: a request sent on
    # seeing the first "aborted" reply runs (the kernel reads the queue whole
    # before it answers any of it)
    ids = [k.kc.execute('t0 = clock()\nwhile clock() - t0 < 0.5 { }\n[][1]')]
    ids += [k.kc.execute('print(%d)' % n) for n in range(12)]
    first = k.reply(ids[1])["content"]["status"]
    late = k.kc.execute('print("sent after an aborted reply")')
    reps = [k.reply(i)["content"]["status"] for i in ids[2:]] + [k.reply(late)["content"]["status"]]
    check("a request sent after the abort runs", first == "aborted"
          and reps == ["aborted"] * 11 + ["ok"], (first, reps))
    i = k.kc.execute('t0 = clock()\nwhile clock() - t0 < 0.5 { }\n[][1]', stop_on_error=False)
    j = k.kc.execute('print("runs")')
    reps = [k.reply(i)["content"]["status"], k.reply(j)["content"]["status"]]
    check("stop_on_error=False runs them", reps == ["error", "ok"], reps)
    msgs, rep = k.run("print(\"alive\")")
    check("the kernel goes on after errors", rep["status"] == "ok"
          and outputs(msgs, "stream")[0]["text"] == "alive\n", msgs)


def test_requests(k):
    k.run("myvariable = 1\n# adds y to x\n# (y is 2 unless given)\nfn inc(x, y=2) {\n    return x + y\n}")
    c = k.request("complete", "z = myv", 7)
    check("complete a global", c["matches"] == ["myvariable"] and c["cursor_start"] == 4 and c["cursor_end"] == 7, c)
    c = k.request("complete", "pri")
    check("complete a builtin", "print" in c["matches"] and c["cursor_start"] == 0, c)
    for pos in [1e300, -5, 2.5]:
        c = k.request("complete", "pri", pos)
        check("complete: cursor %r taken in range" % pos, c["status"] == "ok", c)
    c = k.request("complete", "whi")
    check("complete a keyword", c["matches"] == ["while"], c)
    c = k.request("complete", "é = pri", 7)
    check("complete: cursor in code points", "print" in c["matches"] and c["cursor_start"] == 4, c)
    i = k.request("inspect", "inc(", 4)
    check("inspect a function", i["found"] and i["data"]["text/plain"].startswith("fn inc(x, y=2)")
          and "# adds y to x" in i["data"]["text/plain"], i)
    i = k.request("inspect", "print", 2)
    check("inspect a builtin", i["found"] and i["data"]["text/plain"].startswith("print(")
          and "sep=" in i["data"]["text/plain"], i)
    i = k.request("inspect", "nosuchname", 3)
    check("inspect nothing", i["status"] == "ok" and not i["found"], i)
    for code, want in [("fn f() {", "incomplete"), ("x = [1,\n2", "incomplete"), ("x = 1", "complete"),
                       ("x = = 1", "invalid")]:
        r = k.request("is_complete", code)
        check("is_complete %r" % code, r["status"] == want and (want != "incomplete" or r["indent"] == "    "), r)
    h = k.request("history", hist_access_type="tail", n=2, output=False, raw=True)
    hist = h["history"]
    check("history tail", len(hist) == 2 and hist[-1][2].startswith("myvariable = 1") and hist[-1][0] == 0, hist)
    first = hist[-1][1]
    h = k.request("history", hist_access_type="range", session=0, start=first, stop=first + 1, output=False,
                  raw=True)
    check("history range", [x[1] for x in h["history"]] == [first], h)
    h = k.request("history", hist_access_type="search", pattern="myvar*", output=False, raw=True)
    check("history search", [x[1] for x in h["history"]] == [first], h)
    c = k.request("comm_info")
    check("comm_info", c["status"] == "ok" and c["comms"] == {}, c)
    # the heartbeat echoes
    import zmq
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://%s:%d" % (k.km.ip, k.km.hb_port))
    s.send(b"ping-qh")
    ok = s.poll(5000)
    check("heartbeat", ok and s.recv() == b"ping-qh")
    s.close()


def test_futures(k):
    k.run(SLOW)
    # the cell's value is a future still running: shown as such, with a display_id
    msgs, rep = k.run("slow1(0)")
    d = outputs(msgs, "display_data")
    check("a running future is displayed", rep["status"] == "ok" and len(d) == 1
          and text_of(d[0]).startswith("<future slow1() from cell %d" % rep["execution_count"])
          and d[0]["transient"]["display_id"], msgs)
    did = d[0]["transient"]["display_id"] if d else None
    # a later cell runs a classical loop meanwhile: the update comes while it runs
    others = []
    msg_id = k.kc.execute("t0 = clock()\nn = 0\nwhile clock() - t0 < 2.0 { n += 1 }\nprint(\"done\")")
    msgs = k.iopub_until_idle(msg_id, others=others)
    kinds = [m["msg_type"] for m in msgs]
    ups = [m for m in msgs if m["msg_type"] == "update_display_data"]
    check("updated in place while the later cell runs", len(ups) == 1 and ups[0]["content"]["transient"]["display_id"] == did
          and text_of(ups[0]["content"]) == "1" and kinds.index("update_display_data") < kinds.index("stream"),
          (kinds, ups))
    k.reply(msg_id)
    # display() of a future; a failing one shows the located error in its place
    k.run('qfn bad() on device("statevector", wires=1, latency=0.5) {\n    return [1][3]\n}')
    msgs, rep = k.run("display(slow05(0), bad())\n\"next\"")
    d = outputs(msgs, "display_data")
    check("display() of futures", len(d) == 2 and all("<future " in text_of(x) for x in d), msgs)
    msg_id = k.kc.execute("wait(slow1(0))")
    msgs = k.iopub_until_idle(msg_id)
    k.reply(msg_id)
    ups = {m["content"]["transient"]["display_id"]: text_of(m["content"]) for m in msgs
           if m["msg_type"] == "update_display_data"}
    ids = [x["transient"]["display_id"] for x in d]
    check("display() updated", len(d) == 2 and ups.get(ids[0]) == "1", ups)
    bad = ups.get(ids[1], "") if len(d) == 2 else ""
    check("a failed future shows its located error", "<cell" in bad and "error:" in bad and "out of range" in bad, bad)
    # an update while the kernel is idle goes to the cell that showed it
    msgs, rep = k.run("slow03(0)")
    d = outputs(msgs, "display_data")
    parent = None
    deadline = time.time() + 10
    while time.time() < deadline:
        m = k.kc.get_iopub_msg(timeout=10)
        if m["msg_type"] == "update_display_data":
            parent = m["parent_header"].get("msg_type")
            break
    check("an update while idle", d and parent == "execute_request", parent)
    # ... and again under the next execute request, for a client that reads
    # only the running request's messages (nbclient): the future ended
    # between two cells
    did = d[0]["transient"]["display_id"] if d else None
    msg_id = k.kc.execute("\"after\"")
    msgs = k.iopub_until_idle(msg_id)
    k.reply(msg_id)
    ups = [m for m in msgs if m["msg_type"] == "update_display_data"]
    check("an idle update sent again to the next cell", len(ups) == 1 and ups[0]["content"]["transient"]["display_id"] == did
          and text_of(ups[0]["content"]) == "1" and [m["msg_type"] for m in msgs].index("update_display_data") <
          [m["msg_type"] for m in msgs].index("execute_result"), [(m["msg_type"], m["content"]) for m in msgs])
    msgs, rep = k.run("\"once\"")
    check("... once", not [m for m in msgs if m[0] == "update_display_data"], msgs)
    # a silent request does not take them
    msgs, rep = k.run("slow03(0)")
    d = outputs(msgs, "display_data")
    time.sleep(1.0)
    msgs, rep = k.run("1", silent=True)
    check("a silent request takes no idle update", not [m for m in msgs if m[0] == "update_display_data"], msgs)
    msgs, rep = k.run("2")
    ups = [c for t, c in msgs if t == "update_display_data"]
    check("... the next one does", len(ups) == 1 and d and ups[0]["transient"]["display_id"] == d[0]["transient"]["display_id"],
          msgs)
    # a future that ends while a silent request runs: not to that request
    # (no client shows it), to the cell that showed it and again to the next
    msgs, rep = k.run("slow05(0)")
    d = outputs(msgs, "display_data")
    msg_id = k.kc.execute("t0 = clock()\nwhile clock() - t0 < 2.0 { }", silent=True)
    mine = k.iopub_until_idle(msg_id)
    k.reply(msg_id)
    check("an update during a silent request is not its", d and not [m for m in mine if m["msg_type"] == "update_display_data"],
          mine)
    msgs, rep = k.run("3")
    ups = [c for t, c in msgs if t == "update_display_data"]
    check("... the next cell's", len(ups) == 1 and d and ups[0]["transient"]["display_id"] == d[0]["transient"]["display_id"]
          and text_of(ups[0]) == "1", msgs)


def test_interrupts(k, mode):
    k.run(SLOW)
    # an earlier cell's call goes on
    k.run("early = slow25(0)")
    # a long call: the cell waits in it
    msg_id = k.kc.execute("late = slow60(0)\nprint(late)")
    time.sleep(0.8)
    t0 = time.time()
    k.km.interrupt_kernel()
    msgs = k.iopub_until_idle(msg_id, timeout=20)
    rep = k.reply(msg_id)["content"]
    dt = time.time() - t0
    check("%s interrupt during a long call" % mode, rep["status"] == "error" and rep["ename"] == "KeyboardInterrupt"
          and dt < 5, (rep, dt))
    msgs, rep = k.run("print(early)")
    check("%s interrupt: an earlier cell's call goes on" % mode,
          outputs(msgs, "stream") == [{"name": "stdout", "text": "1\n"}], (msgs, rep))
    msgs, rep = k.run("print(ready(late))")
    # a classical loop
    msg_id = k.kc.execute("i = 0\nwhile true { i += 1 }")
    time.sleep(0.8)
    k.km.interrupt_kernel()
    msgs = k.iopub_until_idle(msg_id, timeout=20)
    rep = k.reply(msg_id)["content"]
    check("%s interrupt during a classical loop" % mode, rep["status"] == "error"
          and rep["ename"] == "KeyboardInterrupt", rep)
    msgs, rep = k.run("print(i > 0)")
    check("%s interrupt: the kernel goes on" % mode, outputs(msgs, "stream") == [{"name": "stdout", "text": "true\n"}],
          msgs)
    # an interrupt while idle does nothing
    k.km.interrupt_kernel()
    time.sleep(0.3)
    msgs, rep = k.run("print(\"still\")")
    check("%s interrupt while idle" % mode, rep["status"] == "ok"
          and outputs(msgs, "stream") == [{"name": "stdout", "text": "still\n"}], (msgs, rep))


def test_input(k):
    # input() asks the frontend (an input_request on the stdin channel), as ipykernel's raw_input
    msg_id = k.kc.execute('print("before")\nname = input("name? ")\nprint("hi " + name)\nname + "!"',
                          allow_stdin=True)
    req = k.kc.get_stdin_msg(timeout=20)
    check("input(): an input_request with the prompt", req["msg_type"] == "input_request"
          and req["content"] == {"prompt": "name? ", "password": False}
          and req["parent_header"].get("msg_id") == msg_id, req)
    k.kc.input("qh \u00e9 user")
    msgs = k.iopub_until_idle(msg_id)
    rep = k.reply(msg_id)["content"]
    text = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    res = [text_of(m["content"]) for m in msgs if m["msg_type"] == "execute_result"]
    check("input(): the reply's line is the value", rep["status"] == "ok" and text == "before\nhi qh \u00e9 user\n"
          and res == ["qh \u00e9 user!"], (msgs, rep))
    # a prompt that is not a string is written as print writes it; two reads in one cell
    msg_id = k.kc.execute('a = input(3.5)\nb = input([1])\nprint(a + "|" + b)', allow_stdin=True)
    prompts = []
    for answer in ["x", ""]:
        req = k.kc.get_stdin_msg(timeout=20)
        prompts.append(req["content"]["prompt"])
        k.kc.input(answer)
    msgs = k.iopub_until_idle(msg_id)
    rep = k.reply(msg_id)["content"]
    check("input(): prompts as print writes them, an empty line", prompts == ["3.5", "[1]"]
          and [m["content"]["text"] for m in msgs if m["msg_type"] == "stream"] == ["x|\n"], (prompts, msgs))
    # a frontend without input (nbclient sends allow_stdin false): a located error, the kernel goes on
    msgs, rep = k.run('z = 1\nz = input("? ")', allow_stdin=False)
    check("input() with allow_stdin false: an error", rep["status"] == "error"
          and "does not support input requests" in rep["evalue"]
          and any(":2:" in line for line in rep["traceback"]), rep)
    # an interrupt while the kernel waits for the line stops the cell as Ctrl-C
    msg_id = k.kc.execute('w = input()\nprint("not reached")', allow_stdin=True)
    req = k.kc.get_stdin_msg(timeout=20)
    check("input(): no prompt", req["content"]["prompt"] == "", req)
    time.sleep(0.3)
    k.km.interrupt_kernel()
    msgs = k.iopub_until_idle(msg_id, timeout=20)
    rep = k.reply(msg_id)["content"]
    check("interrupt while input() waits", rep["status"] == "error" and rep["ename"] == "KeyboardInterrupt"
          and not any(m["msg_type"] == "stream" for m in msgs), (msgs, rep))
    msgs, rep = k.run('print("after input")')
    check("input(): the kernel goes on", outputs(msgs, "stream") == [{"name": "stdout", "text": "after input\n"}],
          (msgs, rep))


def raw_send(k, frames):
    k.kc.shell_channel.socket.send_multipart(frames)


def test_bad_messages(k):
    import hmac
    import hashlib
    key = k.km.session.key
    hdr = json.dumps({"msg_id": "x1", "session": "s", "username": "u", "date": "2026-01-01T00:00:00Z",
                      "msg_type": "kernel_info_request", "version": "5.3"}).encode()
    parts = [hdr, b"{}", b"{}", b"{}"]

    def sign(ps):
        h = hmac.new(key, digestmod=hashlib.sha256)
        for p in ps:
            h.update(p)
        return h.hexdigest().encode()

    raw_send(k, [b"<IDS|MSG>", b""] + parts)                        # unsigned
    raw_send(k, [b"<IDS|MSG>", b"0" * 64] + parts)                  # badly signed
    bad = [hdr, b"{}", b"{}", b"{not json"]
    raw_send(k, [b"<IDS|MSG>", sign(bad)] + bad)                    # signed, malformed JSON
    raw_send(k, [b"garbage"])                                       # no delimiter
    nohdr = [b"{}", b"{}", b"{}", b"{}"]
    raw_send(k, [b"<IDS|MSG>", sign(nohdr)] + nohdr)                # no msg_type
    time.sleep(0.5)
    msgs, rep = k.run("print(40 + 2)")
    check("bad messages are dropped, the kernel goes on", rep["status"] == "ok"
          and outputs(msgs, "stream") == [{"name": "stdout", "text": "42\n"}], msgs)
    # none of them got a reply
    extra = []
    while True:
        try:
            extra.append(k.kc.get_shell_msg(timeout=0.3))
        except Exception:
            break
    check("no replies to dropped messages", extra == [], extra)
    log = k.stderr()
    for why in ["unsigned message", "bad signature", "content: line 1", "no <IDS|MSG> delimiter", "no msg_type"]:
        check("logged: %s" % why, why in log, log)


def test_restart_shutdown(qh):
    k = Kernel(qh)
    k.run("remembered = 1")
    k.km.restart_kernel(now=False)
    k.kc.wait_for_ready(timeout=30)
    msgs, rep = k.run("print(remembered)")
    check("restart: a fresh session", rep["status"] == "error" and rep["execution_count"] == 1, rep)
    k.kc.stop_channels()
    t0 = time.time()
    k.km.shutdown_kernel(now=False)
    dt = time.time() - t0
    proc = k.km.provisioner.process if k.km.provisioner else None
    check("shutdown: the kernel ends by itself", not k.km.is_alive() and dt < 5, dt)
    del proc


def show_log(k):
    # the kernel's own standard error, into the test's log (sanitizer reports land there)
    log = k.stderr()
    print("--- the kernel's standard error:")
    print(log if log.strip() else "(empty)")
    print("---")


def main():
    need_client()
    k = Kernel(QH)
    try:
        test_basics(k)
        test_streams(k)
        test_pictures(k)
        test_errors(k)
        test_requests(k)
        test_futures(k)
        test_interrupts(k, "message")
        test_input(k)
        test_bad_messages(k)
    finally:
        k.close()
        show_log(k)
    k = Kernel(QH, interrupt_mode="signal")
    try:
        test_interrupts(k, "signal")
    finally:
        k.close()
        show_log(k)
    test_restart_shutdown(QH)
    if failures:
        print("%d failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
