#!/usr/bin/env python3
"""The differential test of the asynchronous runtime (lang/async.md: the
output equals a sequential run's, byte for byte).

usage: run.py PATH/TO/qh [--seeds N] [--first S] [--save DIR] [--timeout T]

Runs every program of tests/diff/regressions/ (with the options of its
`# flags:` line) and N generated programs
(tests/diff/gen.py, seeds S..S+N-1) under qh --sync, qh, qh --workers 1
and qh --workers 4, and compares standard output, standard error and the
exit status of every run with the --sync run's: they must be identical.
A difference, a hang (more than T seconds) or a crash (status >= 128, or a
sanitizer report) fails the test; a generated program that fails is
written to DIR (default: the current directory) as diff-SEED.qh, to be
kept in tests/diff/regressions/ once understood and fixed.
Exits 0 when every program agrees, 1 otherwise.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = [["--sync"], [], ["--workers", "1"], ["--workers", "4"]]
SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
             "runtime error:", "SUMMARY: ")


def flags_of(path):
    """a regression's own options: a leading comment line `# flags: ...`"""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("#"):
                break
            if line.startswith("# flags:"):
                return line[len("# flags:"):].split()
    return []


def run(qh, path, mode, timeout):
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        p = subprocess.run([qh] + mode + flags_of(path) + [os.path.basename(path)], cwd=os.path.dirname(path),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, b"", b"timeout after %gs" % timeout


def check(qh, path, timeout):
    """None if every mode agrees with --sync, else the reason."""
    ref = None
    for mode in MODES:
        st, out, err = run(qh, path, mode, timeout)
        label = " ".join(mode) or "(default)"
        if st is None:
            return "%s: hangs (%s)" % (label, err.decode())
        if st >= 128 or st < 0:
            return "%s: crashed with status %d\n%s" % (label, st, err.decode(errors="replace")[-2000:])
        text = err.decode(errors="replace")
        if any(s in text for s in SANITIZER):
            return "%s: sanitizer report\n%s" % (label, text[-3000:])
        if st == 2:
            return "%s: the program is not valid (status 2)\n%s" % (label, text[-1000:])
        if ref is None:
            ref = (st, out, err)
            continue
        if (st, out, err) != ref:
            why = []
            if st != ref[0]:
                why.append("status %d, --sync %d" % (st, ref[0]))
            for name, a, b in (("stdout", out, ref[1]), ("stderr", err, ref[2])):
                if a != b:
                    al, bl = a.decode(errors="replace").splitlines(), b.decode(errors="replace").splitlines()
                    for i in range(max(len(al), len(bl))):
                        x = al[i] if i < len(al) else "<none>"
                        y = bl[i] if i < len(bl) else "<none>"
                        if x != y:
                            why.append("%s line %d: %r, --sync: %r" % (name, i + 1, x, y))
                            break
            return "%s differs from --sync: %s" % (label, "; ".join(why))
    return None


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    qh = os.path.abspath(args[0])
    opts = {"--seeds": "50", "--first": "1", "--save": ".", "--timeout": "60"}
    i = 1
    while i < len(args):
        if args[i] not in opts or i + 1 >= len(args):
            sys.exit(__doc__)
        opts[args[i]] = args[i + 1]
        i += 2
    seeds, first, timeout = int(opts["--seeds"]), int(opts["--first"]), float(opts["--timeout"])
    if os.environ.get("QH_TEST_LIGHT") == "1":
        # .ci/run's ThreadSanitizer step looks for races: the regressions and
        # 10 programs in every mode; the test step runs the meson test's
        # seeds whole and the diff step 300 more
        seeds = min(seeds, 10)
    passed = failed = 0
    regdir = os.path.join(HERE, "regressions")
    for name in sorted(os.listdir(regdir)) if os.path.isdir(regdir) else []:
        if not name.endswith(".qh"):
            continue
        why = check(qh, os.path.join(regdir, name), timeout)
        if why:
            failed += 1
            print("FAIL regressions/%s: %s" % (name, why))
        else:
            passed += 1
    tmp = tempfile.mkdtemp(prefix="qh_diff_")
    try:
        gen = os.path.join(HERE, "gen.py")
        for seed in range(first, first + seeds):
            prog = subprocess.run([sys.executable, gen, str(seed)], stdout=subprocess.PIPE, check=True).stdout
            path = os.path.join(tmp, "diff-%d.qh" % seed)
            with open(path, "wb") as f:
                f.write(prog)
            why = check(qh, path, timeout)
            if why:
                failed += 1
                os.makedirs(opts["--save"], exist_ok=True)
                keep = os.path.join(opts["--save"], "diff-%d.qh" % seed)
                with open(keep, "wb") as f:
                    f.write(b"# found by tests/diff/gen.py " + str(seed).encode() + b"\n" + prog)
                print("FAIL seed %d: %s (program kept as %s)" % (seed, why, keep))
            else:
                passed += 1
            sys.stdout.flush()
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    print("diff: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
