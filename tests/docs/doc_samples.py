#!/usr/bin/env python3
"""Checks the code samples of README.md and lang/*.md against qh, so the
documentation cannot drift from what qh does.

usage: doc_samples.py PATH/TO/qh [SOURCE_ROOT] [PAGE...]

Every fenced code block in those pages names its kind in the info string
(lang/README.md, "Samples", is the convention; this is its checker):

  ```qh            a qh program: run with `qh FILE` and with `qh --sync FILE`;
                   its `# prints TEXT` and `# -> VALUE` comments, or the
                   `output` / `stderr` block after it, are what it must print,
                   and it must exit 0 (or `status=N`)
  ```qh norun ...  a qh sample that is not run (a fragment, or output that
                   depends on time or the machine); the words after `norun`
                   say why
  ```output        the standard output of the qh block before it
  ```stderr        its standard error
  ```console       a shell transcript: `$ qh ...` lines run in both modes,
                   the lines under each are its output (stdout and stderr)
  ```repl          a REPL transcript: `qh> ` and `... ` lines are typed into
                   qh on a pseudo-terminal, the other lines are what it shows
  ```text, ```sh   not qh code (timelines, messages, grammar, shell setup):
                   never run, and may not contain a `$ qh` or `qh> ` line
  (``` + kind + ` norun ...` marks any runnable kind as not runnable)

A table whose header is `| expression | prints |` (or `| value | prints |`)
is checked row by row: `print(EXPRESSION)` must print the second cell.
An HTML comment `<!-- qh prelude ... -->` holds code that runs, unseen,
before the next qh block. In output, stderr and console blocks a line that
is exactly `...` stands for any number of lines.

Prints one line per failure (`PAGE:LINE: ...`) and a summary; exits 1 on
a failure, or when fewer than MIN_CHECKED claims were checked.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MIN_CHECKED = 150
TIMEOUT = 120
MODES = (("default", []), ("--sync", ["--sync"]))
KINDS = {"qh", "output", "stderr", "console", "repl", "text", "sh"}
RUNNABLE = {"qh", "console", "repl"}


class Block:
    def __init__(self, page, line, kind, attrs, norun, lines):
        self.page, self.line, self.kind, self.attrs, self.norun, self.lines = page, line, kind, attrs, norun, lines
        self.prelude = None
        self.output = None      # Block
        self.stderr = None      # Block

    def where(self, k=0):
        return "%s:%d" % (self.page.rel, self.line + k)


class Table:
    def __init__(self, page, line, rows):
        self.page, self.line, self.rows = page, line, rows   # rows: [(md line, expr, want)]


class Page:
    def __init__(self, root, path):
        self.path = path
        self.rel = os.path.relpath(path, root)
        self.blocks, self.tables, self.errors = [], [], []


FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")


def parse_page(root, path):
    page = Page(root, path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    prelude = None
    while i < len(lines):
        ln = lines[i]
        m = FENCE.match(ln)
        if m:
            indent, ticks, info = len(m.group(1)), m.group(2), m.group(3).strip()
            body = []
            j = i + 1
            while j < len(lines):
                c = FENCE.match(lines[j])
                if c and c.group(3).strip() == "" and len(c.group(2)) >= len(ticks):
                    break
                l = lines[j]
                body.append(l[indent:] if l[:indent].strip() == "" else l.lstrip())
                j += 1
            if j == len(lines):
                page.errors.append("%s:%d: a code block is not closed" % (page.rel, i + 1))
            words = info.split()
            kind = words[0] if words else ""
            attrs, norun = {}, None
            k = 1
            while k < len(words):
                w = words[k]
                if w in ("norun", "norun:"):
                    norun = " ".join(words[k + 1:]) or "(no reason given)"
                    break
                if "=" in w:
                    key, val = w.split("=", 1)
                    attrs[key] = val
                else:
                    attrs[w] = True
                k += 1
            b = Block(page, i + 1, kind, attrs, norun, body)
            if not kind:
                page.errors.append("%s:%d: a code block without a kind: write ```qh, ```text, ... "
                                   "(lang/README.md, \"Samples\")" % (page.rel, i + 1))
            elif kind not in KINDS:
                page.errors.append("%s:%d: unknown code block kind '%s' (known: %s)"
                                   % (page.rel, i + 1, kind, ", ".join(sorted(KINDS))))
            else:
                bad = set(attrs) - {"file", "status", "cont"}
                if bad:
                    page.errors.append("%s:%d: unknown attribute %s (known: file=NAME, status=N, cont, norun REASON)"
                                       % (page.rel, i + 1, ", ".join(sorted(bad))))
                if kind == "qh" and prelude is not None:
                    b.prelude = prelude
                    prelude = None
                page.blocks.append(b)
            i = j + 1
            continue
        if ln.strip().startswith("<!-- qh prelude"):
            body = []
            j = i + 1
            while j < len(lines) and "-->" not in lines[j]:
                body.append(lines[j])
                j += 1
            prelude = body
            i = j + 1
            continue
        # a checked table: | expression | prints |
        if ln.lstrip().startswith("|"):
            head = split_row(ln)
            if len(head) == 2 and head[0] in ("expression", "value") and head[1] == "prints" \
                    and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|$", lines[i + 1].strip()):
                rows = []
                j = i + 2
                while j < len(lines) and lines[j].lstrip().startswith("|"):
                    cells = split_row(lines[j])
                    cm = [re.fullmatch(r"`(.*)`", c) for c in cells]
                    if len(cells) != 2 or not all(cm):
                        page.errors.append("%s:%d: a row of a checked table needs two code cells: `expression` | `output`"
                                           % (page.rel, j + 1))
                    else:
                        rows.append((j + 1, cm[0].group(1), cm[1].group(1)))
                    j += 1
                page.tables.append(Table(page, i + 1, rows))
                i = j
                continue
        i += 1
    # attach output / stderr blocks to the qh block before them
    last = None
    for b in page.blocks:
        if b.kind == "qh":
            last = b
        elif b.kind in ("output", "stderr"):
            if last is None or getattr(last, b.kind) is not None:
                page.errors.append("%s:%d: a ```%s block needs a ```qh block before it (one each)" % (page.rel, b.line, b.kind))
            else:
                setattr(last, b.kind, b)
        elif b.kind in ("text", "sh"):
            for k, l in enumerate(b.lines):
                if l.startswith("$ qh") or l.startswith("qh> "):
                    page.errors.append("%s:%d: a ```%s block holds a transcript: make it ```console or ```repl"
                                       " (or mark it norun)" % (page.rel, b.line + 1 + k, b.kind))
                    break
    return page


def split_row(ln):
    s = ln.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells = re.split(r"(?<!\\)\|", s)
    return [c.strip().replace("\\|", "|") for c in cells]


# ------------------------------------------------------------ qh comments

def split_comment(line, q=None):
    """(code, comment, quote) of a qh source line: the comment is the text
    after a `#` outside string literals, or None; q is the quote of a string
    continued from the line before (a backslash at its end), and quote the
    one this line leaves open that way."""
    i = 0
    while i < len(line):
        c = line[i]
        if q:
            if c == "\\":
                if i == len(line) - 1:
                    return line, None, q
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c == "#":
            return line[:i], line[i + 1:], None
        i += 1
    return line, None, None


def top_level(code, chars):
    """Positions of chars in code outside strings and brackets."""
    out, depth, q, i = [], 0, None, 0
    while i < len(code):
        c = code[i]
        if q:
            if c == "\\":
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in chars:
            out.append(i)
        i += 1
    return out


def value_line(code):
    """Rewrites a line whose value is claimed (`# -> VALUE`) so that it
    prints it; None when the line is neither an expression nor `NAME = ...`."""
    semis = top_level(code, ";")
    head, last = (code[:semis[-1] + 1], code[semis[-1] + 1:]) if semis else ("", code)
    for p in top_level(last, "="):
        before, after = last[p - 1:p] if p else "", last[p + 1:p + 2]
        if after == "=" or before in "=!<>":
            continue
        target = last[:p].rstrip("+-*/").strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", target):
            return None
        return code.rstrip() + "; print(%s)" % target
    if not last.strip():
        return None
    lead = len(last) - len(last.lstrip())
    return head + last[:lead] + "print(" + last.strip() + ")"


CLAIM = re.compile(r"^\s*(prints|->)(?:\s(.*)|$)")


def program_of(b, errors):
    """The program text of a qh block (value claims rewritten) and the
    stdout its claims expect (None when it makes none)."""
    src, want = [], []
    q = None
    for k, l in enumerate(b.lines):
        code, comment, q = split_comment(l, q)
        m = CLAIM.match(comment) if comment is not None else None
        if not m:
            src.append(l)
            continue
        text = (m.group(2) or "").rstrip()
        if m.group(1) == "->":
            new = value_line(code)
            if new is None:
                errors.append("%s: '# -> VALUE' needs an expression or `NAME = ...` on its line" % b.where(k + 1))
                new = code
            src.append(new)
        else:
            src.append(l)
        want.append(text)
    return src, (want if want else None)


# ------------------------------------------------------------ matching

def match_lines(want, got):
    """Exact line match, except that a wanted line `...` stands for any
    number of lines."""
    memo = {}

    def rec(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(want):
            r = j == len(got)
        elif want[i] == "...":
            r = any(rec(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and want[i] == got[j] and rec(i + 1, j + 1)
        memo[key] = r
        return r
    return rec(0, 0)


def lines_of(s):
    ls = [l.rstrip() for l in s.split("\n")]
    while ls and ls[-1] == "":
        ls.pop()
    return ls


def show(ls, limit=12):
    if len(ls) > limit:
        ls = ls[:limit] + ["... (%d more lines)" % (len(ls) - limit)]
    return "\n".join("      | " + l for l in ls) if ls else "      | (nothing)"


# ------------------------------------------------------------ running

class Runner:
    def __init__(self, qh, root):
        self.qh = qh
        self.root = root
        self.tmp = tempfile.mkdtemp(prefix="qh_docs_")
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("QH_", "XDG_", "LC_")) and k not in ("HOME",)}
        self.env["LANG"] = "C.UTF-8"

    def sandbox(self, page):
        """A directory per page: the page's named programs, and links to the
        source tree's examples/ and stdlib/; bin/qh runs qh in the mode
        DOC_QH_FLAGS names."""
        d = os.path.join(self.tmp, re.sub(r"[^A-Za-z0-9]", "_", page.rel))
        if os.path.isdir(d):
            return d
        os.makedirs(os.path.join(d, "bin"))
        os.makedirs(os.path.join(d, "home"))
        for sub in ("examples", "stdlib"):
            os.symlink(os.path.join(self.root, sub), os.path.join(d, sub))
        with open(os.path.join(d, "bin", "qh"), "w") as f:
            f.write('#!/bin/sh\nexec "%s" $DOC_QH_FLAGS "$@"\n' % self.qh)
        os.chmod(os.path.join(d, "bin", "qh"), 0o755)
        return d

    def run(self, page, cwd, argv, flags, stdin=None):
        """Runs argv in cwd; the page's directory holds bin/qh (first on the
        PATH) and its named programs (on QH_PATH, so samples import them)."""
        pdir = self.sandbox(page)
        env = dict(self.env, HOME=os.path.join(cwd, "home"), DOC_QH_FLAGS=" ".join(flags), QH_PATH=pdir,
                   PATH=os.path.join(pdir, "bin") + os.pathsep + self.env.get("PATH", "/usr/bin:/bin"))
        try:
            p = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return 124, "", "timed out after %d s" % TIMEOUT
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Result:
    def __init__(self):
        self.checked = 0        # claims checked
        self.runs = 0
        self.failures = []


def prepare_program(runner, b, chain, res):
    """Writes the program of one qh block (after the blocks it continues):
    FILE in the page's directory for file=FILE, else t.qh in a directory of
    its own. Returns a job for check_program, or None after errors."""
    errors = []
    src, want = [], []
    any_claim = False
    own = 0
    for x in chain:
        s, w = program_of(x, errors)
        if x.prelude:
            s = x.prelude + s
        if w is not None and x.output is not None:
            errors.append("%s: a block with `# prints` claims cannot also have an output block" % x.where())
        if w is not None:
            want += w
            any_claim = True
            own = len(w)
        elif x.output is not None:
            want += x.output.lines
            any_claim = True
            own = 1
        else:
            own = 0
        src += s
    if b.output is not None:        # it shows the whole program's output
        want = list(b.output.lines)
    any_claim = True                # no claims: it prints nothing
    if errors:
        res.failures += errors
        return None
    pdir = runner.sandbox(b.page)
    cwd = os.path.join(pdir, "b%d" % b.line)
    os.makedirs(os.path.join(cwd, "home"))
    name = b.attrs.get("file") or "t.qh"
    text = "\n".join(src) + "\n"
    with open(os.path.join(cwd, name), "w") as f:
        f.write(text)
    if b.attrs.get("file"):
        # named programs are the page's files too: console blocks run them,
        # other samples import them
        shared = os.path.join(pdir, name)
        if os.path.exists(shared):
            res.failures.append("%s: another sample of the page is saved as %s already" % (b.where(), name))
            return None
        with open(shared, "w") as f:
            f.write(text)
    return (check_program, b, cwd, name, want if any_claim else None, own)


def check_program(runner, b, cwd, name, want, own, res):
    """Runs a prepared qh block in both modes."""
    any_claim = want is not None
    status = int(b.attrs.get("status", (b.stderr.attrs.get("status", 0) if b.stderr else 0)))
    for mode, flags in MODES:
        st, out, err = runner.run(b.page, cwd, [runner.qh] + flags + [name], flags)
        res.runs += 1
        why = []
        if st != status:
            why.append("exit status %d, expected %d" % (st, status))
        if any_claim and not match_lines(want, lines_of(out)):
            why.append("stdout differs:\n    expected:\n%s\n    got:\n%s" % (show(want), show(lines_of(out))))
        if b.stderr is not None and not match_lines(b.stderr.lines, lines_of(err)):
            why.append("stderr differs:\n    expected:\n%s\n    got:\n%s" % (show(b.stderr.lines), show(lines_of(err))))
        if b.stderr is None and err:
            why.append("unexpected stderr (show it in a ```stderr block):\n%s" % show(lines_of(err)))
        if why:
            res.failures.append("%s: qh sample (%s): %s" % (b.where(), mode, "; ".join(why)))
            return
    res.checked += own + (1 if b.stderr else 0)


def check_table(runner, t, res):
    cwd = runner.sandbox(t.page)
    src = ["print(%s)" % e for (_, e, _) in t.rows]
    name = "table_%d.qh" % t.line
    with open(os.path.join(cwd, name), "w") as f:
        f.write("\n".join(src) + "\n")
    for mode, flags in MODES:
        st, out, err = runner.run(t.page, cwd, [runner.qh] + flags + [name], flags)
        res.runs += 1
        got = lines_of(out)
        bad = []
        for k, (ln, e, w) in enumerate(t.rows):
            g = got[k] if k < len(got) else "(nothing)"
            if g != w:
                bad.append("%s:%d: `%s` prints `%s`, the table says `%s`" % (t.page.rel, ln, e, g, w))
        if st != 0 and not bad:
            bad.append("%s:%d: the table's program exits %d: %s" % (t.page.rel, t.line, st, err.strip()[:300]))
        if bad:
            res.failures += ["%s (%s)" % (x, mode) for x in bad]
            return
    res.checked += len(t.rows)


def check_console(runner, b, res):
    cwd = runner.sandbox(b.page)
    cmds = []        # (md line, command, expected lines)
    for k, l in enumerate(b.lines):
        if l.startswith("$ "):
            cmds.append([b.line + 1 + k, l[2:], []])
        elif cmds and not cmds[-1][2] and l.startswith("> "):
            cmds[-1][1] += "\n" + l[2:]          # the command goes on (PS2)
        elif cmds:
            cmds[-1][2].append(l.rstrip())
        elif l.strip():
            res.failures.append("%s: a ```console block starts with `$ COMMAND`" % b.where(k + 1))
            return
    for ln, cmd, want in cmds:
        while want and want[-1] == "":
            want.pop()
        for mode, flags in MODES:
            st, out, err = runner.run(b.page, cwd, ["bash", "-c", "{ %s\n} 2>&1" % cmd], flags)
            res.runs += 1
            got = lines_of(out)
            if not match_lines(want, got):
                res.failures.append("%s:%d: `$ %s` (%s) shows:\n    expected:\n%s\n    got:\n%s"
                                    % (b.page.rel, ln, cmd, mode, show(want), show(got)))
                break
        else:
            res.checked += 1


def check_repl(runner, b, res):
    """Types a transcript's input lines into the REPL on a pseudo-terminal and
    compares what comes back between prompts."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repl"))
    import test_repl   # the pty driver of the REPL test
    steps = []      # (md line, typed line, expected lines after it)
    for k, l in enumerate(b.lines):
        if l.startswith("qh> ") or l.startswith("... ") or l in ("qh>", "..."):
            steps.append([b.line + 1 + k, l[4:], []])
        elif steps:
            steps[-1][2].append(l.rstrip())
        else:
            res.failures.append("%s: a ```repl block starts with `qh> `" % b.where(k + 1))
            return
    cwd = runner.sandbox(b.page)
    for mode, flags in MODES:
        home = tempfile.mkdtemp(dir=cwd)
        r = test_repl.Repl(runner.qh, home, home, cwd, flags, term="dumb")
        try:
            r.prompt()
            for ln, typed, want in steps:
                start = r.mark
                r.send(typed + "\r")
                m = r.expect(r"\n(qh> |\.\.\. )", what="a prompt after %r" % typed)
                got = [l.rstrip() for l in r.text[start:m.start()].split("\n")[1:]]
                if got != want:
                    res.failures.append("%s:%d: the REPL (%s) after `%s` shows:\n    expected:\n%s\n    got:\n%s"
                                        % (b.page.rel, ln, mode, typed, show(want), show(got)))
                    return
                res.runs += 1
            r.send("\x04")
            r.wait_exit()
        except test_repl.Failure as e:
            res.failures.append("%s: the REPL (%s): %s" % (b.where(), mode, e))
            return
        finally:
            r.close()
    res.checked += sum(1 for s in steps if s[2]) or 1


def check_pages(qh, root, pages):
    """Checks the pages; returns (result, the blocks marked not runnable)."""
    runner = Runner(qh, root)
    res = Result()
    norun = []
    jobs = []
    try:
        for rel in pages:
            page = parse_page(root, os.path.join(root, rel))
            res.failures += page.errors
            prev = []
            for b in page.blocks:
                if b.kind not in RUNNABLE:
                    continue
                if b.norun is not None:
                    norun.append("%s (%s)" % (b.where(), b.norun))
                    if b.kind == "qh":
                        prev = []
                    continue
                if b.kind == "qh":
                    chain = (prev if b.attrs.get("cont") else []) + [b]
                    if b.attrs.get("cont") and not prev:
                        res.failures.append("%s: `cont` needs a runnable qh block before it" % b.where())
                    prev = chain
                    job = prepare_program(runner, b, chain, res)
                    if job:
                        jobs.append(job)
                elif b.kind == "console":
                    jobs.append((check_console, b))
                else:
                    jobs.append((check_repl, b))
            for t in page.tables:
                jobs.append((check_table, t))
        # the machine is shared: two at a time
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            futs = [ex.submit(j[0], runner, *j[1:], res) for j in jobs]
            for f in futs:
                f.result()
    finally:
        shutil.rmtree(runner.tmp, ignore_errors=True)
    res.failures.sort(key=lambda f: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", f.split(" ")[0])])
    return res, norun


SELF_TEST_PAGE = """# A page with one sample of each kind, right and wrong

```qh
print(1 + 1)               # prints 2
len([1, 2])                # -> 2
x = [1] * 3                # -> [1, 1, 1]
```

```qh
print(1 + 1)               # prints 3
```

```qh
print("a")
```

```qh
print("b")
```
```output
b
```

```qh file=err.qh
print(1 / 0)
```
```stderr status=1
err.qh:1:9: error: division by zero
    1 | print(1 / 0)
      |         ^
```

```qh file=err2.qh
print(1 / 0)
```
```stderr status=1
err2.qh:1:9: error: something else
...
```

```qh norun: a fragment
if c { ... }
```

```qh
if c { ... }
```

```console
$ qh -e 'print(6 * 7)'
42
$ qh -e 'print(6 * 7)'
41
```

```repl
qh> 6 * 7
42
qh> 6 * 8
47
```

```text
$ qh hidden transcript
```

```
untagged
```

```qh
sleep(0)
print(ready(1))            # prints true
```

| expression | prints |
|---|---|
| `2 ** 10` | `1024` |
| `2 ** 11` | `2047` |

<!-- qh prelude
fn hidden() { return "from the prelude" }
-->
```qh
print(hidden())            # prints from the prelude
```

```qh cont
print(hidden() + "!")      # prints from the prelude!
```
"""

# (page line, the start of the failure message) the checker must report
SELF_TEST_WANT = [
    (9, "qh sample (default): stdout differs"),
    (13, "qh sample (default): stdout differs"),
    (33, "qh sample (default): stderr differs"),
    (45, "qh sample (default): exit status 2, expected 0"),
    (52, "`$ qh -e 'print(6 * 7)'` (default) shows"),
    (59, "the REPL (default) after `6 * 8` shows"),
    (64, "a ```text block holds a transcript"),
    (67, "a code block without a kind"),
    (79, "`2 ** 11` prints `2048`, the table says `2047`"),
]


def self_test(qh):
    """Runs the checker on a page with known mistakes: it must find exactly
    those, and pass the right samples."""
    root = tempfile.mkdtemp(prefix="qh_docs_self_")
    try:
        for sub in ("examples", "stdlib", "lang"):
            os.makedirs(os.path.join(root, sub))
        with open(os.path.join(root, "lang", "page.md"), "w") as f:
            f.write(SELF_TEST_PAGE)
        res, norun = check_pages(qh, root, ["lang/page.md"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    bad = []
    got = list(res.failures)
    for line, start in SELF_TEST_WANT:
        hit = [f for f in got if f.startswith("lang/page.md:%d:" % line) and start in f]
        if not hit:
            bad.append("the checker did not report line %d: %s" % (line, start))
        for h in hit:
            got.remove(h)
    got = [f for f in got if "(--sync)" not in f]
    bad += ["the checker reported what is right: " + f.split("\n")[0] for f in got]
    # the claims that hold: 3 + output + stderr + a console command + ready
    # + the prelude + cont (a table counts only when all its rows hold)
    want_checked = 3 + 1 + 1 + 1 + 1 + 1 + 1
    if res.checked != want_checked:
        bad.append("the checker counted %d claims checked, not %d" % (res.checked, want_checked))
    if len(norun) != 1:
        bad.append("the checker counted %d blocks not run, not 1" % len(norun))
    for b in bad:
        print("FAIL " + b)
    print("doc sample checker self-test: %s" % ("failed" if bad else "ok"))
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--self-test"] and len(args) == 2:
        return self_test(os.path.abspath(args[1]))
    if not args:
        print("usage: doc_samples.py PATH/TO/qh [SOURCE_ROOT [PAGE...]] | --self-test PATH/TO/qh", file=sys.stderr)
        return 2
    qh = os.path.abspath(args[0])
    root = os.path.abspath(args[1]) if len(args) > 1 else \
        os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    pages = args[2:] or (["README.md"] + sorted("lang/" + f for f in os.listdir(os.path.join(root, "lang"))
                                                 if f.endswith(".md")))
    t0 = time.monotonic()
    res, norun = check_pages(qh, root, pages)
    for f in res.failures:
        print("FAIL " + f)
    print("doc samples: %d claims checked (%d runs of qh, both modes, %.1f s); %d blocks marked not runnable"
          % (res.checked, res.runs, time.monotonic() - t0, len(norun)))
    if os.environ.get("DOC_SAMPLES_VERBOSE"):
        for n in norun:
            print("  not run: " + n)
    if res.checked < MIN_CHECKED and not args[2:]:
        print("FAIL only %d claims checked: at least %d must be" % (res.checked, MIN_CHECKED))
        return 1
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
