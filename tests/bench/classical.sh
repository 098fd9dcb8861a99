#!/usr/bin/env bash
# Classical-performance benchmark: qh against CPython and Lua 5.4.
#
#   tests/bench/classical.sh [PATH/TO/qh]
#
# Runs each program of tests/bench/classical/ (NAME.qh, NAME.py, NAME.lua:
# the same algorithm in each language) under each interpreter, checks its
# output against the expected value (a wrong output, a non-zero exit or a
# timeout is reported as FAIL and not timed), and prints a Markdown table of
# the best wall-clock time of RUNS runs (default 3; the start-up program,
# being a few milliseconds, takes the best of max(RUNS, 20)), followed by a
# verdict line per goal:
#   - qh faster than CPython on every program;
#   - qh within 2x of Lua on every program;
#   - qh start-up (an empty program) under 10 ms.
#
# With BASE=PATH/TO/other/qh (an earlier build; classical_compare.sh builds
# one from a commit) that qh runs too, its runs interleaved with this one's,
# and the table gains a column qh/base with one more verdict:
#   - no slower than base on every program (ratio <= 1.02: best-of-N
#     times on a quiet machine differ by about that from run to run).
#
# Environment: RUNS (runs per measurement), PYTHON (default /usr/bin/python3),
# LUA (default lua5.4), BENCH_TIMEOUT (seconds per run, default 300),
# ONLY (space-separated program names to run, default all), BASE.
# Writes nothing: it only reads the programs and runs the interpreters.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
qh=${1:-$root/build/src/qh}
python=${PYTHON:-/usr/bin/python3}
lua=${LUA:-lua5.4}

if [ ! -x "$qh" ]; then
    echo "error: qh binary not found or not executable: $qh" >&2
    exit 2
fi
if [ ! -x "$python" ]; then
    echo "error: $python not found (needed for CPython and the timing wrapper)" >&2
    exit 2
fi
if ! command -v "$lua" >/dev/null 2>&1; then
    echo "note: $lua not found (apt-get install -y lua5.4): the Lua column is skipped" >&2
    lua=""
fi

base=${BASE:-}
if [ -n "$base" ] && [ ! -x "$base" ]; then
    echo "error: BASE qh binary not found or not executable: $base" >&2
    exit 2
fi

exec "$python" - "$here/classical" "$qh" "$python" "$lua" "$base" <<'PYEOF'
import os, subprocess, sys, time

bench_dir, qh, python, lua, base = sys.argv[1:6]
runs = int(os.environ.get("RUNS", "3"))
timeout = float(os.environ.get("BENCH_TIMEOUT", "300"))

# name, expected stdout (stripped), description
PROGRAMS = [
    ("fib",     "832040",              "recursive fib(30)"),
    ("loop",    "19999999",            "sum of (i*i) % 7 for i < 10,000,000"),
    ("calls",   "12499997500000",      "s = add(s, i) for i < 5,000,000"),
    ("list",    "999510719238.281250", "1,000,000-element list, 10 passes of a[i] = a[i]*0.5 + i, sum"),
    ("dicts",   "1999999000000",       "1,000,000 three-field dicts, fields summed"),
    ("strings", "1088890",             "join str(i) for i < 200,000, length"),
    ("startup", "",                    "empty program"),
]
only = os.environ.get("ONLY", "").split()
if only:
    PROGRAMS = [p for p in PROGRAMS if p[0] in only]

LANGS = [("qh", [qh], "qh"), ("CPython", [python], "py")]
if lua:
    LANGS.append(("Lua", [lua], "lua"))
if base:
    LANGS.append(("base", [base], "qh"))


def measure_once(cmd, expected):
    """Wall-clock seconds of one run, or an error string."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "FAIL (timeout after %gs)" % timeout
    dt = time.perf_counter() - t0
    out = p.stdout.decode(errors="replace").strip()
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        return "FAIL (exit %d: %s)" % (p.returncode, err[0] if err else "")
    if out != expected:
        return "FAIL (printed %r, expected %r)" % (out[:60], expected)
    return dt


def measure(name, expected, n):
    """{lang: best wall-clock seconds of n rounds, or an error string}; the
    interpreters take turns in each round so that all see the same load."""
    best = {}
    for _ in range(n):
        for lang, argv, ext in LANGS:
            if isinstance(best.get(lang), str):
                continue
            r = measure_once(argv + [os.path.join(bench_dir, "%s.%s" % (name, ext))], expected)
            best[lang] = r if isinstance(r, str) or lang not in best else min(best[lang], r)
    return best


def fmt_t(v):
    if isinstance(v, str):
        return "FAIL"
    return "%.3f" % v if v >= 0.1 else "%.4f" % v


def ratio(a, b):
    if isinstance(a, str) or isinstance(b, str) or b is None or a is None:
        return None
    return a / b


results = {}
failures = []
for name, expected, _desc in PROGRAMS:
    n = max(runs, 20) if name == "startup" else runs
    best = measure(name, expected, n)
    for lang, argv, ext in LANGS:
        r = best[lang]
        results[(name, lang)] = r
        if isinstance(r, str):
            failures.append("%s.%s%s: %s" % (name, ext, " (base)" if lang == "base" else "", r))
        print("  %-8s %-8s %s" % (name, lang, fmt_t(r)), file=sys.stderr, flush=True)

have_lua = any(l[0] == "Lua" for l in LANGS)
hdr = ["program", "qh s", "CPython s"] + (["Lua s"] if have_lua else []) + (["base s"] if base else []) + \
      ["qh/CPython"] + (["qh/Lua"] if have_lua else []) + (["qh/base"] if base else [])
print()
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
for name, _e, _d in PROGRAMS:
    q = results[(name, "qh")]
    c = results[(name, "CPython")]
    row = [name, fmt_t(q), fmt_t(c)]
    if have_lua:
        row.append(fmt_t(results[(name, "Lua")]))
    if base:
        row.append(fmt_t(results[(name, "base")]))
    rc = ratio(q, c)
    row.append("—" if rc is None else "%.2f" % rc)
    if have_lua:
        rl = ratio(q, results[(name, "Lua")])
        row.append("—" if rl is None else "%.2f" % rl)
    if base:
        rb = ratio(q, results[(name, "base")])
        row.append("—" if rb is None else "%.3f" % rb)
    print("| " + " | ".join(row) + " |")
print()
print("Best of %d interleaved wall-clock runs (startup: best of %d), including process start-up%s." %
      (runs, max(runs, 20), "; base: " + base if base else ""))
print()

names = [p[0] for p in PROGRAMS]

def verdict(label, bad, unknown):
    if unknown:
        return "- %s: **UNKNOWN** (failed: %s)" % (label, ", ".join(unknown))
    if bad:
        return "- %s: **NO** (%s)" % (label, ", ".join(bad))
    return "- %s: **YES**" % label

bad, unk = [], []
for n in names:
    r = ratio(results[(n, "qh")], results[(n, "CPython")])
    if r is None: unk.append(n)
    elif r >= 1.0: bad.append("%s %.2fx" % (n, r))
print(verdict("qh faster than CPython on every program", bad, unk))
if have_lua:
    bad, unk = [], []
    for n in names:
        r = ratio(results[(n, "qh")], results[(n, "Lua")])
        if r is None: unk.append(n)
        elif r > 2.0: bad.append("%s %.2fx" % (n, r))
    print(verdict("qh within 2x of Lua 5.4 on every program", bad, unk))
else:
    print("- qh within 2x of Lua 5.4 on every program: **SKIPPED** (lua5.4 not installed)")
if base:
    bad, unk = [], []
    for n in names:
        r = ratio(results[(n, "qh")], results[(n, "base")])
        if r is None: unk.append(n)
        elif r > 1.02: bad.append("%s %.3fx" % (n, r))
    print(verdict("no slower than base on every program", bad, unk))
if "startup" in names:
    s = results[("startup", "qh")]
    if isinstance(s, str):
        print("- qh start-up under 10 ms: **UNKNOWN** (%s)" % s)
    else:
        print("- qh start-up under 10 ms: **%s** (%.1f ms)" % ("YES" if s < 0.010 else "NO", s * 1000))
if failures:
    print()
    print("Failures:")
    for f in failures:
        print("- " + f)
sys.exit(1 if failures else 0)
PYEOF
