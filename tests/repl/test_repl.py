#!/usr/bin/env python3
"""Drives the qh REPL through a pseudo-terminal, as a person would
(LANGUAGE.md §11, the REPL paragraph).

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
    want_out(r.line("f"), ["1"], "a future global")


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
    want(any(re.search(r"slow\(\).*line\s+\d+", l) for l in out), ":tasks: expected slow() and a line, got %r" % out)
    # Ctrl-C on the wait cancels it, y is left failed/cancelled, the session goes on
    r.send("y\r")
    r.expect(r"y\n", what="the echo of y")
    time.sleep(0.3)
    t0 = time.monotonic()
    r.send("\x03")
    r.prompt(timeout=8)
    want(time.monotonic() - t0 < 5, "waiting for y: the prompt came back late")
    out = r.line(":tasks")
    want(not any("slow()" in l for l in out), ":tasks after Ctrl-C: the cancelled task is still listed: %r" % out)
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
    want(any(re.search(r"line 1:.*x", l) for l in out), ":deps: expected a dependency line for x, got %r" % out)
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
                if fn is not case_dash_i:
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
