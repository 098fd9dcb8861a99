#!/usr/bin/env python3
"""Drives the qh REPL through a pseudo-terminal, as a person would
(lang/command-line.md, "The REPL").

usage: test_repl.py PATH/TO/qh

Each case spawns qh under a pty with a fresh HOME and XDG_STATE_HOME, waits
for the prompts `qh> ` / `... `, types input and reads what comes back.
Output is matched after ANSI escape sequences (bracketed paste among them),
carriage returns and bells are stripped.  Prints `ok N name` or
`FAIL N name: why` per case and a summary line; exits 1 on failures.
"""
import errno
import fcntl
import os
import re
import select
import shutil
import signal
import struct
import sys
import tempfile
import termios
import time
import traceback

TIMEOUT = 10.0      # seconds to wait for a prompt or an expected text

ANSI = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"         # CSI ... final (bracketed paste \e[?2004h/l included)
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL / ST
    rb"|\x1b[()*+][0-9A-Za-z]"          # charset designation
    rb"|\x1b[@-Z\\-_=>]"                # other two-byte escapes
)


def clean(raw):
    """The terminal output as plain text: no escapes, CRs, bells, NULs."""
    b = ANSI.sub(b"", raw)
    b = b.replace(b"\r", b"").replace(b"\x07", b"").replace(b"\x00", b"")
    # readline may move the cursor back with BS and rewrite: apply it
    out = bytearray()
    for c in b:
        if c == 8:
            if out and out[-1] != 10:
                out.pop()
        else:
            out.append(c)
    return out.decode("utf-8", "replace")


class Failure(Exception):
    pass


class Repl:
    """One qh process on a pseudo-terminal."""

    def __init__(self, qh, home, state, cwd, args=(), term="xterm", extra_env=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QH_", "LC_", "INPUTRC"))}
        env.update(HOME=home, XDG_STATE_HOME=state, TERM=term, LANG="C.UTF-8",
                   INPUTRC=os.path.join(home, ".inputrc"), COLUMNS="200", LINES="50")
        env.pop("TMUX", None)
        if extra_env:
            env.update(extra_env)
        self.raw = b""
        self.mark = 0          # position in clean(raw) where the next search starts
        self.status = None
        pid, fd = os.forkpty()
        if pid == 0:
            try:
                os.chdir(cwd)
                os.execve(qh, [qh] + list(args), env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        # a wide window so readline never scrolls or wraps the line
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))

    # ---- reading ----
    def _pump(self, timeout):
        """Reads what is available within timeout; False at end of output."""
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError as e:
            if e.errno in (errno.EIO, errno.EBADF):
                return False
            raise
        if not data:
            return False
        self.raw += data
        return True

    @property
    def text(self):
        return clean(self.raw)

    def expect(self, pattern, timeout=TIMEOUT, what=None):
        """Waits until regex pattern matches the output after the mark;
        moves the mark past the match and returns the match."""
        rx = re.compile(pattern, re.S)
        end = time.monotonic() + timeout
        alive = True
        while True:
            t = self.text
            m = rx.search(t, self.mark)
            if m:
                self.mark = m.end()
                return m
            left = end - time.monotonic()
            if left <= 0 or not alive:
                raise Failure("timed out waiting for %s; got %r" % (what or repr(pattern), t[self.mark:][-600:]))
            alive = self._pump(min(left, 0.2))

    def prompt(self, timeout=TIMEOUT):
        """Waits for the main prompt at the start of a line; returns the text
        from the mark up to it."""
        start = self.mark
        m = self.expect(r"(?:^|\n)qh> ", timeout, "the prompt 'qh> '")
        return self.text[start:m.start()]

    def cont(self, timeout=TIMEOUT):
        start = self.mark
        m = self.expect(r"(?:^|\n)\.\.\. ", timeout, "the continuation prompt '... '")
        return self.text[start:m.start()]

    def settle(self, quiet=0.3, timeout=TIMEOUT):
        """Reads until nothing has come for `quiet` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            n = len(self.raw)
            if not self._pump(quiet):
                return
            if len(self.raw) == n:
                return

    # ---- writing ----
    def send(self, s):
        os.write(self.fd, s.encode() if isinstance(s, str) else s)

    def line(self, s, timeout=TIMEOUT):
        """Types a line and Enter; returns the output lines printed before the
        next main prompt (the echo of the typed line left out)."""
        self.send(s + "\r")
        out = self.prompt(timeout)
        return output_lines(out)

    # ---- ending ----
    def wait_exit(self, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self._pump(0.1)
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                # drain the rest
                while self._pump(0.05) and select.select([self.fd], [], [], 0)[0]:
                    pass
                self.status = os.waitstatus_to_exitcode(st) if hasattr(os, "waitstatus_to_exitcode") else \
                    (os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st))
                return self.status
        raise Failure("qh did not exit within %g s; output %r" % (timeout, self.text[-400:]))

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -9
        try:
            os.close(self.fd)
        except OSError:
            pass


def output_lines(chunk):
    """The lines a command printed: the echo (first line) dropped."""
    lines = chunk.split("\n")
    return [l.rstrip() for l in lines[1:]]


def want(cond, why):
    if not cond:
        raise Failure(why)


def want_out(got, expected, what):
    want(got == expected, "%s: expected output %r, got %r" % (what, expected, got))


# ------------------------------------------------------------------ cases

class Ctx:
    def __init__(self, qh):
        self.qh = qh
        self.root = tempfile.mkdtemp(prefix="qh_repl_")
        self.n = 0

    def fresh(self):
        """A new HOME / XDG_STATE_HOME / working directory."""
        self.n += 1
        base = os.path.join(self.root, "s%d" % self.n)
        home, state, cwd = (os.path.join(base, d) for d in ("home", "state", "cwd"))
        for d in (home, state, cwd):
            os.makedirs(d)
        return home, state, cwd

    def spawn(self, dirs=None, args=(), **kw):
        home, state, cwd = dirs or self.fresh()
        r = Repl(self.qh, home, state, cwd, args, **kw)
        return r

    def start(self, dirs=None, args=(), **kw):
        r = self.spawn(dirs, args, **kw)
        try:
            r.prompt()
        except BaseException:
            r.close()
            raise
        return r


def case_values(ctx, r):
    want_out(r.line("1 + 2"), ["3"], "1 + 2")
    want_out(r.line("a = 40 + 2"), [], "an assignment")
    want_out(r.line("a"), ["42"], "a")
    want_out(r.line('"hello world"'), ["hello world"], "a string")
    want_out(r.line("nil"), [], "nil")
    want_out(r.line("[1, \"x\"]"), ['[1, "x"]'], "a list")
    want_out(r.line("print(\"p\")"), ["p"], "print() (its nil result not printed)")
    # the same on a dumb terminal
    d = ctx.start(term="dumb")
    try:
        want_out(d.line("1 + 2"), ["3"], "1 + 2 with TERM=dumb")
        want_out(d.line("s = \"a\" + \"b\""), [], "an assignment with TERM=dumb")
        want_out(d.line("s"), ["ab"], "a string with TERM=dumb")
        d.send("\x04")
        want(d.wait_exit() == 0, "TERM=dumb: Ctrl-D did not exit 0")
    finally:
        d.close()


def case_multiline(ctx, r):
    r.send("fn sq(x) {\r")
    r.cont()
    r.send("return x * x\r")
    r.cont()
    r.send("}\r")
    out = output_lines(r.prompt())
    want_out(out, [], "the function definition")
    want_out(r.line("sq(7)"), ["49"], "sq(7)")
    r.send("xs = [1,\r")
    r.cont()
    r.send("2,\r")
    r.cont()
    r.send("3]\r")
    r.prompt()
    want_out(r.line("xs"), ["[1, 2, 3]"], "a list typed across lines")
    r.send("len([10,\r")
    r.cont()
    r.send("20])\r")
    want_out(output_lines(r.prompt()), ["2"], "an expression across lines")


def case_errors(ctx, r):
    want_out(r.line("keep = 99"), [], "keep = 99")
    out = r.line("1 / 0")
    joined = "\n".join(out)
    want(re.search(r"^<repl>:1:\d+: error: division by zero", joined, re.M),
         "1 / 0: expected '<repl>:1:N: error: division by zero', got %r" % out)
    want_out(r.line("keep"), ["99"], "a global after an error")
    out = r.line("undefined_name_q")
    want(any("error:" in l and "undefined_name_q" in l for l in out), "an undefined name: got %r" % out)
    want_out(r.line("keep + 1"), ["100"], "the session after a second error")
    # a syntax error too
    out = r.line("x = = 2")
    want(any("<repl>:1:" in l and "error" in l for l in out), "a syntax error: got %r" % out)
    want_out(r.line("keep"), ["99"], "a global after a syntax error")


def case_futures(ctx, r):
    want_out(r.line('dev = device("statevector", wires=1)'), [], "the device")
    want_out(r.line("qfn c(x) on dev { RX(x, 0); return expval(PauliZ(0)) }"), [], "the qfn")
    want_out(r.line("c(0)"), ["1"], "c(0)")
    want_out(r.line("f = c(0)"), [], "f = c(0)")
    want_out(r.line(":wait f"), ["1"], ":wait f")
    want_out(r.line("f"), ["1"], "a future global, done")


SLOW = 'qfn slow() on device("statevector", wires=1, latency=30) { return 1 }'


def case_ctrl_c_call(ctx, r):
    want_out(r.line(SLOW), [], "the slow qfn")
    for stmt in ("wait(slow())", "x = slow(); print(x)"):
        r.send(stmt + "\r")
        r.expect(re.escape(stmt.split(";")[0]), what="the echo of %r" % stmt)
        time.sleep(0.5)
        t0 = time.monotonic()
        r.send("\x03")
        out = r.prompt(timeout=8)
        took = time.monotonic() - t0
        want(took < 5, "%s: the prompt came back after %.1f s" % (stmt, took))
        want("interrupted" in out, "%s: expected 'interrupted', got %r" % (stmt, out))
        want_out(r.line("1 + 1"), ["2"], "the session after Ctrl-C of %s" % stmt)
    # :tasks with a pending task
    want_out(r.line("y = slow()"), [], "y = slow()")
    out = r.line(":tasks")
    want(any(re.search(r"slow\(\) from entry \d+: ", l) for l in out), ":tasks: expected slow() and its entry, got %r" % out)
    # y is an earlier entry's call: showing it does not wait
    out = r.line("y", timeout=3)
    want(len(out) == 1 and re.fullmatch(r"<future slow\(\) from entry 6: (running|queued)>", out[0]),
         "y while slow() runs: %r" % out)
    # Ctrl-C on :wait stops the waiting; y, an earlier entry's call, goes on
    r.send(":wait y\r")
    r.expect(r":wait y\n", what="the echo of :wait y")
    time.sleep(0.3)
    t0 = time.monotonic()
    r.send("\x03")
    r.prompt(timeout=8)
    want(time.monotonic() - t0 < 5, "waiting for y: the prompt came back late")
    out = r.line(":tasks")
    want(any("slow()" in l for l in out), ":tasks after Ctrl-C of :wait: y's call should go on: %r" % out)
    want_out(r.line("2 + 2"), ["4"], "the session after cancelling y")


def case_ctrl_c_prompt(ctx, r):
    r.send("\x03")
    r.prompt()
    r.settle()
    want_out(r.line("1 + 2"), ["3"], "after Ctrl-C at an empty prompt")
    r.send("half_typed_garbage")
    r.expect("half_typed_garbage", what="the echo")
    r.send("\x03")
    # (readline may redraw the old text before the prompt: judge by the effect)
    r.expect("qh> ", what="a prompt after Ctrl-C")
    r.settle()
    want_out(r.line("5 * 5"), ["25"], "after Ctrl-C with a half-typed line (was it cleared?)")


def case_ctrl_c_continuation(ctx, r):
    # Ctrl-C at a continuation prompt drops the pending lines: a fresh 'qh> '
    r.send("fn broken(x) {\r")
    r.cont()
    r.send("\x03")
    out = r.expect(r"\n(qh> |\.\.\. )", what="a prompt after Ctrl-C")
    want(out.group(1) == "qh> ", "Ctrl-C at '... ' shows %r, not a fresh 'qh> ' (the pending lines are kept)"
         % out.group(0).strip())
    want_out(r.line("6 * 7"), ["42"], "after Ctrl-C at a continuation prompt")


def case_ctrl_d(ctx, r):
    want_out(r.line("z = 1"), [], "z = 1")
    r.send("\x04")
    st = r.wait_exit()
    want(st == 0, "exit status %r after Ctrl-D, expected 0" % st)


def case_history(ctx, r):
    dirs = r.dirs
    want_out(r.line("hist_a = 111"), [], "hist_a = 111")
    want_out(r.line("x_hist = 12345"), [], "x_hist = 12345")
    r.send("\x04")
    want(r.wait_exit() == 0, "the first session did not exit 0")
    r.close()
    hist = os.path.join(dirs[1], "qh", "history")
    want(os.path.isfile(hist), "no history file at %s (state dir holds %r)" % (hist, os.listdir(dirs[1])))
    with open(hist, encoding="utf-8", errors="replace") as f:
        content = f.read()
    want("x_hist = 12345" in content, "history file lacks the line: %r" % content)
    r2 = ctx.start(dirs)
    try:
        r2.send("\x1b[A")
        r2.expect(r"x_hist = 12345", what="Up recalling 'x_hist = 12345'")
        r2.send("\r")
        want_out(output_lines(r2.prompt()), [], "the recalled assignment")
        want_out(r2.line("x_hist"), ["12345"], "x_hist after recall")
        # hist_a = 111 is four back now (x_hist, x_hist = 12345 twice):
        # redisplay makes the echo hard to read, so judge by the effect
        for _ in range(4):
            r2.send("\x1b[A")
            time.sleep(0.2)
        r2.send("\r")
        r2.prompt()
        want_out(r2.line("hist_a"), ["111"], "hist_a after Up x4")
        r2.send("\x04")
        want(r2.wait_exit() == 0, "the second session did not exit 0")
    finally:
        r2.close()


def case_history_multiline(ctx, r):
    # a statement typed across lines is one history entry, in the session
    # and after a restart
    dirs = r.dirs
    r.send("fn hf(x) {\r")
    r.cont()
    r.send("return x + 1\r")
    r.cont()
    r.send("}\r")
    r.prompt()
    want_out(r.line("hf = nil"), [], "hf = nil")
    r.send("\x1b[A")
    time.sleep(0.3)
    r.send("\x1b[A")
    time.sleep(0.3)
    r.send("\r")
    r.prompt()
    want_out(r.line("hf(1)"), ["2"], "the multi-line definition recalled in its session")
    r.send("\x04")
    want(r.wait_exit() == 0, "the first session did not exit 0")
    r.close()
    r2 = ctx.start(dirs)
    try:
        # the history now ends: <fn hf>, hf = nil, <fn hf>, hf(1)
        r2.send("\x1b[A")
        time.sleep(0.3)
        r2.send("\x1b[A")
        time.sleep(0.3)
        r2.send("\r")
        out = r2.expect(r"\n(qh> |\.\.\. )", what="a prompt after the recalled entry")
        why = "" if out.group(1) == "qh> " else "; it left a continuation prompt"
        err = [l for l in output_lines(r2.text[:out.start()].rsplit("qh> ", 1)[-1] + "\n") if "error" in l]
        want(not err and not why, "Up Up after a restart does not recall the whole multi-line entry "
             "(the history file keeps its lines apart)%s%s" % (why, ": %r" % err if err else ""))
        want_out(r2.line("hf(1)"), ["2"], "the multi-line definition recalled after a restart")
    finally:
        r2.close()


def case_completion(ctx, r):
    with open(os.path.join(r.dirs[2], "_m.qh"), "w") as f:
        f.write("fn helper_fn() { return 1 }\n")
    want_out(r.line("my_long_variable = 5"), [], "the variable")
    r.send("my_lo\t")
    r.expect(r"my_long_variable", what="my_lo TAB completing")
    r.send("\r")
    want_out(output_lines(r.prompt()), ["5"], "the completed line")
    r.send("pri\t")
    r.expect(r"print", what="pri TAB completing to print")
    r.send('("via tab")\r')
    want_out(output_lines(r.prompt()), ["via tab"], "the completed print")
    out = r.line("import _m")
    want_out(out, [], "import _m")
    r.send("_m.hel\t")
    r.expect(r"_m\.helper_fn", what="_m.hel TAB completing to _m.helper_fn")
    # the completion may append a space: '_m.helper_fn ()' is still a call
    r.send("()\r")
    want_out(output_lines(r.prompt()), ["1"], "the completed module call")
    # keywords
    r.send("qf\t")
    r.expect(r"qfn", what="qf TAB completing the keyword qfn")
    r.send("\x03")
    r.prompt()
    # commands
    r.send(":hel\t")
    r.expect(r":help", what=":hel TAB completing :help")
    r.send("\r")
    out = output_lines(r.prompt())
    want(any(":quit" in l for l in out), ":help after completion: %r" % out)


def case_commands(ctx, r):
    out = r.line(":help")
    for c in (":help", ":quit", ":tasks", ":time", ":deps", ":load"):
        want(any(c in l for l in out), ":help does not list %s: %r" % (c, out))
    out = r.line(":time sleep(0.2)")
    m = None
    for l in out:
        m = re.search(r"wall\s+([0-9.]+)\s*s", l) or m
    want(m, ":time: no wall time in %r" % out)
    want(float(m.group(1)) >= 0.2, ":time: wall time %s < 0.2" % m.group(1))
    out = r.line(":time 6 * 7")
    want("42" in out, ":time 6 * 7 does not print the value: %r" % out)
    out = r.line(":deps x = 1")
    want(any(re.search(r"entry \d+: writes x", l) for l in out), ":deps: expected a dependency line for x, got %r" % out)
    out = r.line("x")
    want(any("error" in l for l in out), ":deps ran its statement (x is defined: %r)" % out)
    path = os.path.join(r.dirs[2], "loaded.qh")
    with open(path, "w") as f:
        f.write('loaded_g = 7\nfn loaded_f(n) { return n + loaded_g }\nprint("loading")\n')
    out = r.line(":load loaded.qh")
    want_out(out, ["loading"], ":load")
    want_out(r.line("loaded_f(3)"), ["10"], "a function from :load")
    out = r.line(":load no_such_file.qh")
    want(any("no_such_file" in l for l in out), ":load of a missing file: %r" % out)
    out = r.line(":bogus")
    want(any("unknown command" in l for l in out), ":bogus: %r" % out)
    want_out(r.line("loaded_g"), ["7"], "the session after command errors")
    r.send(":quit\r")
    try:
        st = r.wait_exit()
    except Failure:
        raise Failure(":quit did not end the session; the output after it: %r"
                      % r.text[r.text.rfind(":quit"):][:80])
    want(st == 0, ":quit: exit status %r" % st)


def case_dash_i(ctx, r_unused):
    dirs = ctx.fresh()
    with open(os.path.join(dirs[2], "script.qh"), "w") as f:
        f.write('script_g = 21\nfn twice(n) { return 2 * n }\nprint("script ran")\n')
    r = ctx.spawn(dirs, ["-i", "script.qh"])
    try:
        before = r.prompt()
        want("script ran" in before, "-i: the script's output is missing: %r" % before)
        want_out(r.line("twice(script_g)"), ["42"], "-i globals")
        want_out(r.line("script_g = script_g + 1"), [], "-i assignment")
        want_out(r.line("script_g"), ["22"], "-i global updated")
        r.send("\x04")
        st = r.wait_exit()
        want(st == 0, "-i: exit status %r" % st)
    finally:
        r.close()


def case_analysis_error_text(ctx, r):
    # an analysis error shows the entry's own text, with the caret under the fault
    want_out(r.line('dev = device("statevector", wires=1)'), [], "the device")
    out = r.line("qfn bad() on dev { print(1); return 1 }")
    want(len(out) >= 3 and out[0].startswith("<repl>:1:20: error: quantum function 'bad' prints"),
         "the analysis error: %r" % out)
    want_out(out[1:3], ["    1 | qfn bad() on dev { print(1); return 1 }",
                        "      |                    ^"], "the analysis error's source line and caret")
    # a resolver error too
    out = r.line("global x")
    want_out(out, ["<repl>:1:1: error: 'global' outside a function", "    1 | global x", "      | ^"],
             "a resolver error")
    # in a multi-line entry, the line of the fault
    r.send("qfn bad2(t) on dev {\r")
    r.cont()
    r.send("  x = t\r")
    r.cont()
    r.send("  print(x)\r")
    r.cont()
    r.send("  return 1 }\r")
    out = output_lines(r.prompt())
    want(len(out) >= 3 and out[0].startswith("<repl>:3:3: error: quantum function 'bad2' prints")
         and out[1] == "    3 |   print(x)" and out[2] == "      |   ^", "a multi-line entry's analysis error: %r" % out)
    # the rejected functions are not defined, and do not linger in :deps
    out = r.line("bad")
    want(any("name 'bad' is not defined" in l for l in out), "the rejected qfn is defined: %r" % out)
    want_out(r.line("qfn bad() on dev { return 2 }"), [], "bad, defined again, pure")
    want_out(r.line("bad()"), ["2"], "the new bad()")


def case_deps_entries(ctx, r):
    out = r.line(":deps")
    want(any("no entry has run yet" in l for l in out), ":deps before any entry: %r" % out)
    want_out(r.line('dev = device("statevector", wires=1)'), [], "entry 2")
    want_out(r.line("qfn c(t) on dev { RX(t, 0); return expval(PauliZ(0)) }"), [], "entry 3")
    want_out(r.line("fn helper() { return 1 }"), [], "entry 4")
    want_out(r.line("x = c(0.1)"), [], "entry 5")
    want_out(r.line(":deps"), ["# entry 5: dependency analysis", "entry 5: dispatches c(); writes x"],
             ":deps after entry 5 (the entry just run, without the functions loaded before)")
    want_out(r.line("y = c(x); z = 2"), [], "entry 7")
    want_out(r.line(":deps"), ["# entry 7: dependency analysis", "entry 7: dispatches c(); writes y",
                               "entry 7 chains on c() from entry 5 (via x), in the background", "entry 7: writes z"],
             ":deps of an entry that chains on an earlier one")
    want_out(r.line(":deps print(y + z)"), ["# entry 9: dependency analysis", "entry 9: reads y, z",
                                              "entry 9 waits for c() from entry 7 (via y)"],
             ":deps STMT: analysed as entry 9")
    want_out(r.line(":deps qfn d() on dev { return helper() }"),
             ["# entry 10: dependency analysis", "qfn d (entry 10): pure; takes along: helper",
              "entry 10: writes d; reads dev"], ":deps of a definition")
    out = r.line("d")
    want(any("name 'd' is not defined" in l for l in out), ":deps STMT ran its statement: %r" % out)
    r.send("w = 1\r")
    r.prompt()
    r.send("if w {\r")
    r.cont()
    r.send("  v = c(w)\r")
    r.cont()
    r.send("}\r")
    r.prompt()
    want_out(r.line(":deps"), ["# entry 13: dependency analysis", "entry 13: dispatches c(); writes v; reads w"],
             ":deps of a multi-line entry")


def case_time_usage(ctx, r):
    out = r.line(":time")
    want(any(l.startswith("usage: :time STMT") for l in out), ":time alone: %r" % out)
    want(not any(re.match(r"wall [0-9]", l) for l in out), ":time alone timed something: %r" % out)
    out = r.line(":time   ")
    want(any(l.startswith("usage: :time STMT") for l in out), ":time with blanks: %r" % out)
    out = r.line(":time x = 6 * 7")
    want(len(out) == 1 and re.match(r"wall [0-9.]+ s, waiting [0-9.]+ s$", out[0]), ":time x = 6 * 7: %r" % out)
    want_out(r.line("x"), ["42"], "the statement :time ran")
    out = r.line(":load")
    want(any(l.startswith("usage: :load FILE") for l in out), ":load alone: %r" % out)


def case_pending_future(ctx, r):
    want_out(r.line('qfn slow(t) on device("statevector", wires=1, latency=2) { RX(t, 0); return 7 }'), [], "slow")
    want_out(r.line("x = slow(0.1)"), [], "x = slow(0.1): entry 2")
    t0 = time.monotonic()
    out = r.line("x", timeout=1.5)
    want(time.monotonic() - t0 < 1.5, "showing a pending future waited")
    # (queued until a worker picks it up, on a busy machine)
    want(len(out) == 1 and re.fullmatch(r"<future slow\(\) from entry 2: (running|queued)>", out[0]),
         "a pending future from an earlier entry: %r" % out)
    out = r.line("[x, 1]")
    want_out(out, ["[7, 1]"], "a value that holds a pending future waits for it")
    # a call made by the entry itself is waited for
    t0 = time.monotonic()
    want_out(r.line("slow(0.2)", timeout=8), ["7"], "a call made by the entry")
    want(time.monotonic() - t0 >= 1.5, "slow(0.2) did not wait for its latency")
    want_out(r.line("y = slow(0.3)"), [], "y = slow(0.3)")
    out = r.line(":tasks")
    want(any(re.match(r"\s*slow\(\) from entry 6: (running on a worker|queued)", l) for l in out),
         ":tasks shows the call and its entry: %r" % out)
    want_out(r.line(":wait y", timeout=8), ["7"], ":wait y")
    want_out(r.line("y"), ["7"], "y once done")
    want_out(r.line("z = slow(0.4)"), [], "z = slow(0.4)")
    want_out(r.line(":wait", timeout=8), [], ":wait alone waits for every task")
    want_out(r.line("z"), ["7"], "z after :wait")
    out = r.line(":help")
    want(any(":wait" in l for l in out) and any("<future NAME() from entry N: running>" in l for l in out),
         ":help does not explain pending futures and :wait: %r" % out)


def case_pending_future_sync(ctx, r_unused):
    # with --sync every call is done when its entry ends: values, never placeholders
    r = ctx.start(args=["--sync"])
    try:
        want_out(r.line('qfn q() on device("statevector", wires=1, latency=0.2) { return 5 }'), [], "q")
        want_out(r.line("x = q()"), [], "x = q()")
        want_out(r.line("x"), ["5"], "x with --sync")
        out = r.line(":tasks")
        want(any("no background tasks (--sync)" in l for l in out), ":tasks with --sync: %r" % out)
    finally:
        r.close()


def case_hidden_builtin(ctx, r):
    want_out(r.line("sum = [1]"), [], "sum = [1]: no call yet, no warning")
    out = r.line("sum([2, 3])")
    want(len(out) >= 2 and out[0] == "<repl>:1:1: warning: 'sum' hides the builtin sum(), called at entry 2"
         and out[1] == "    1 | sum = [1]", "the warning at the call in a later entry: %r" % out)
    want(any("list is not callable" in l for l in out), "the call's error: %r" % out)
    out = r.line("sum([4])")
    want(not any("warning" in l for l in out), "a second warning for sum: %r" % out)
    # a function of the name: meant
    want_out(r.line("fn probs() { return 1 }"), [], "fn probs")
    want_out(r.line("probs()"), ["1"], "probs() calls the function, no warning")
    # a function typed before the global existed calls the builtin: no conflict
    want_out(r.line("fn n(xs) { return len(xs) }"), [], "fn n")
    want_out(r.line("len = 5"), [], "len = 5: the builtin in n() is not hidden")
    want_out(r.line("n([1, 2])"), ["2"], "n() still calls the builtin")
    # a call that reaches the global, then a binding that is not a function
    want_out(r.line("fn state() { return 1 }"), [], "fn state: meant")
    want_out(r.line("fn get() { return state() }"), [], "get() calls the global state")
    out = r.line("state = [0]")
    want_out(out, ["<repl>:1:1: warning: 'state' hides the builtin state(), called at entry 10",
                   "    1 | state = [0]", "      | ^"], "the warning at the binding in a later entry")


def case_dash_i_error(ctx, r_unused):
    # qh -i: after a runtime error in the script the REPL starts anyway, with
    # the globals the script had bound (as python -i does)
    dirs = ctx.fresh()
    with open(os.path.join(dirs[2], "broken.qh"), "w") as f:
        f.write('before = 1\nqfn c(t) on device("statevector", wires=1) { RX(t, 0); return expval(PauliZ(0)) }\n'
                'fut = c(0)\nprint(1 / 0)\nafter = 2\n')
    r = ctx.spawn(dirs, ["-i", "broken.qh"])
    try:
        before = r.prompt()
        want("broken.qh:4:9: error: division by zero" in before, "-i: the script's error is missing: %r" % before)
        out = r.line(":deps")
        want(out[:2] == ["# broken.qh: dependency analysis", "qfn c (line 2): pure; takes along: nothing"],
             ":deps shows the script before any entry: %r" % out)
        want_out(r.line("before"), ["1"], "a global bound before the error")
        out = r.line("after")
        want(any("name 'after' is not defined" in l for l in out), "a global after the error: %r" % out)
        want_out(r.line(":wait fut"), ["1"], "the script's call")
        want_out(r.line("g = c(fut)"), [], "a call in the session")
        want_out(r.line(":deps"), ["# entry 5: dependency analysis", "entry 5: dispatches c(); writes g",
                                   "entry 5 chains on c() from line 3 (via fut), in the background"],
                 ":deps of an entry after -i: it names the script's line")
        r.send("\x04")
        st = r.wait_exit()
        want(st == 0, "-i after an error: exit status %r, expected 0 (the session ended normally)" % st)
    finally:
        r.close()
    # a syntax error: nothing ran, no REPL, status 2
    with open(os.path.join(dirs[2], "syntax.qh"), "w") as f:
        f.write("x = (1 +\n")
    r = ctx.spawn(dirs, ["-i", "syntax.qh"])
    try:
        st = r.wait_exit()
        want(st == 2, "-i with a syntax error: exit status %r, expected 2" % st)
        want("syntax.qh:2:1: error:" in r.text, "-i with a syntax error: %r" % r.text)
    finally:
        r.close()


def case_history_xdg_default(ctx, r_unused):
    # without XDG_STATE_HOME, ~/.local/state/qh/history is used when it exists
    home, state, cwd = ctx.fresh()
    os.makedirs(os.path.join(home, ".local", "state", "qh"))
    hist = os.path.join(home, ".local", "state", "qh", "history")
    open(hist, "w").close()
    r = Repl(ctx.qh, home, state, cwd, extra_env={"XDG_STATE_HOME": ""})
    try:
        r.prompt()
        want_out(r.line("xdg_default_entry = 1"), [], "an entry")
        r.send("\x04")
        r.wait_exit()
    finally:
        r.close()
    with open(hist) as f:
        want("xdg_default_entry = 1" in f.read(), "the entry is not in ~/.local/state/qh/history")
    want(not os.path.exists(os.path.join(home, ".qh_history")), "~/.qh_history was written too")


# ---- issue 13: the REPL's tasks (async) ----

SLOW2 = 'qfn slow2(t) on device("statevector", wires=1, latency=2) { return t }'


def case_ctrl_c_own_tasks(ctx, r):
    """Ctrl-C cancels the running statement and the calls it made, not
    those of earlier entries."""
    want_out(r.line(SLOW2), [], "slow2")
    want_out(r.line("x = slow2(1)"), [], "x = slow2(1): entry 2")
    r.send("y = slow2(2); sleep(5)\r")
    r.expect(r"sleep\(5\)\n", what="the echo of the sleep")
    time.sleep(0.3)
    r.send("\x03")
    out = r.prompt(timeout=8)
    want("interrupted" in out, "expected 'interrupted', got %r" % out)
    out = r.line(":tasks")
    want(any(re.match(r"\s*slow2\(\) from entry 2: ", l) for l in out), ":tasks: entry 2's call should go on: %r" % out)
    want(not any("entry 3" in l for l in out), ":tasks: entry 3's call should be cancelled: %r" % out)
    want_out(r.line(":wait x", timeout=8), ["1"], "x, from before the Ctrl-C")


def case_tasks_names_holder(ctx, r):
    """:tasks names the variable holding each future and its entry."""
    want_out(r.line(SLOW2), [], "slow2")
    want_out(r.line("res = [slow2(1)]; z = slow2(3)"), [], "two calls: entry 2")
    out = r.line(":tasks")
    want(any(re.match(r"\s*slow2\(\) from entry 2: .*held by res\[0\]", l) for l in out), ":tasks: res[0]: %r" % out)
    want(any(re.match(r"\s*slow2\(\) from entry 2: .*held by z$", l) for l in out), ":tasks: z: %r" % out)


def case_ctrl_d_pending(ctx, r):
    """Ctrl-D with calls running: says what it waits for and that Ctrl-C
    abandons them; it ends once they are done."""
    want_out(r.line(SLOW2), [], "slow2")
    want_out(r.line("x = slow2(1)"), [], "x = slow2(1)")
    t0 = time.monotonic()
    r.send("\x04")
    r.expect(r"waiting for 1 background task \(slow2\(\) from entry 2\); Ctrl-C abandons them",
             what="what Ctrl-D waits for")
    want(r.wait_exit(timeout=10) == 0, "Ctrl-D: the session did not end 0 once x was done")
    want(time.monotonic() - t0 >= 0.5, "Ctrl-D did not wait for x")
    # Ctrl-C abandons them
    r2 = ctx.start()
    try:
        want_out(r2.line(SLOW2.replace("latency=2", "latency=30")), [], "slow2 (30 s)")
        want_out(r2.line("x = slow2(1)"), [], "x = slow2(1)")
        r2.send("\x04")
        r2.expect(r"Ctrl-C abandons them", what="the Ctrl-D message")
        time.sleep(0.3)
        t0 = time.monotonic()
        r2.send("\x03")
        st = r2.wait_exit(timeout=8)
        want(time.monotonic() - t0 < 5, "Ctrl-C after Ctrl-D: the session did not end promptly")
        want(st == 130, "Ctrl-C after Ctrl-D: status %r, expected 130" % st)
    finally:
        r2.close()


CASES = [
    (1, "values", case_values),
    (2, "multi-line input", case_multiline),
    (3, "errors keep the session", case_errors),
    (4, "futures", case_futures),
    (5, "ctrl-c cancels a call; :tasks", case_ctrl_c_call),
    (6, "ctrl-c at the prompt", case_ctrl_c_prompt),
    (7, "ctrl-d exits 0", case_ctrl_d),
    (8, "history across sessions", case_history),
    (9, "tab completion", case_completion),
    (10, "commands", case_commands),
    (11, "qh -i", case_dash_i),
    (12, "ctrl-c at a continuation prompt", case_ctrl_c_continuation),
    (13, "multi-line history entry", case_history_multiline),
    (14, "analysis errors show the entry's text", case_analysis_error_text),
    (15, ":deps shows the entry just run, numbered by entry", case_deps_entries),
    (16, ":time without a statement prints its usage", case_time_usage),
    (17, "a pending future from an earlier entry; :wait", case_pending_future),
    (18, "no pending futures with --sync", case_pending_future_sync),
    (19, "a global that hides a builtin, across entries", case_hidden_builtin),
    (20, "qh -i after a runtime error; a syntax error", case_dash_i_error),
    (21, "history in ~/.local/state/qh when it exists", case_history_xdg_default),
    (22, "Ctrl-C cancels only the statement's own calls", case_ctrl_c_own_tasks),
    (23, ":tasks names the variable holding each future", case_tasks_names_holder),
    (24, "Ctrl-D with calls running says what it waits for", case_ctrl_d_pending),
]


def main():
    if len(sys.argv) != 2:
        print("usage: test_repl.py PATH/TO/qh", file=sys.stderr)
        return 2
    qh = os.path.abspath(sys.argv[1])
    if not os.access(qh, os.X_OK):
        print("test_repl.py: %s is not an executable" % qh, file=sys.stderr)
        return 2
    only = set(os.environ.get("QH_REPL_ONLY", "").split(",")) - {""}
    ctx = Ctx(qh)
    passed = failed = 0
    try:
        for num, name, fn in CASES:
            if only and str(num) not in only:
                continue
            r = None
            try:
                if fn not in (case_dash_i, case_dash_i_error, case_pending_future_sync, case_history_xdg_default):
                    dirs = ctx.fresh()
                    r = ctx.start(dirs)
                    r.dirs = dirs
                fn(ctx, r)
                print("ok %d %s" % (num, name))
                passed += 1
            except Failure as e:
                print("FAIL %d %s: %s" % (num, name, e))
                failed += 1
            except Exception as e:
                print("FAIL %d %s: %s" % (num, name, "".join(traceback.format_exception_only(type(e), e)).strip()))
                failed += 1
            finally:
                if r is not None:
                    r.close()
            sys.stdout.flush()
    finally:
        shutil.rmtree(ctx.root, ignore_errors=True)
    print("repl: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
