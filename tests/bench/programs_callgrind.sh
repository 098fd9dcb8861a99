#!/usr/bin/env bash
# Instruction counts of the real-program benchmark (tests/bench/programs/)
# under callgrind, for steering speed work on a machine whose wall-clock is
# unreliable (shared, loaded): qh against CPython and Lua at scaled-down
# sizes, each count repeatable to a fraction of a percent.
#
#   tests/bench/programs_callgrind.sh [PATH/TO/qh]
#
# Prints a Markdown table of millions of instructions per interpreter and
# the ratios qh / CPython and qh / Lua, both of the whole run and net of
# start-up (an empty program's count subtracted), with geometric means.
# Outputs are checked against CPython's as in programs.sh.
#
# Environment: ONLY (program names), LANGS (default "qh py lua"; e.g. "qh"
# for qh's counts alone), PYTHON, LUA, VALGRIND (default valgrind).
# Needs valgrind. Writes nothing outside a temporary directory.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
qh=${1:-$root/build/src/qh}
python=${PYTHON:-/usr/bin/python3}
lua=${LUA:-lua5.4}
valgrind=${VALGRIND:-valgrind}

[ -x "$qh" ] || { echo "error: qh binary not found or not executable: $qh" >&2; exit 2; }
command -v "$valgrind" >/dev/null 2>&1 || { echo "error: valgrind not found" >&2; exit 2; }

exec "$python" - "$here/programs" "$qh" "$python" "$lua" "$valgrind" <<'PYEOF'
import math, os, re, subprocess, sys, tempfile

prog_dir, qh, python, lua, valgrind = sys.argv[1:6]
# sizes where CPython runs about 0.05 s natively
PROGRAMS = [
    ("nbody", 10000), ("spectralnorm", 100), ("fannkuchredux", 8), ("binarytrees", 12),
    ("mandelbrot", 120), ("fasta", 25000), ("nqueen", 10), ("matmul", 100),
    ("sudoku", 2), ("bedcov", 10000), ("strappend", 20000),
]
only = os.environ.get("ONLY", "").split()
if only:
    PROGRAMS = [p for p in PROGRAMS if p[0] in only]
want = os.environ.get("LANGS", "qh py lua").split()
LANGS = [(ext, cmd) for ext, cmd in (("qh", qh), ("py", python), ("lua", lua)) if ext in want]
tmp = tempfile.mkdtemp()


def count(cmd):
    out = os.path.join(tmp, "cg.out")
    p = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if os.path.exists(out):
        os.unlink(out)
    m = re.search(rb"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        return None, p.stdout
    return int(m.group(1)), p.stdout


empty = {}
for ext, cmd in LANGS:
    path = os.path.join(tmp, "empty." + ext)
    open(path, "w").close()
    empty[ext] = count([cmd, path])[0] or 0

rows = []
for name, n in PROGRAMS:
    res = {}
    ref = None
    for ext, cmd in LANGS:
        c, out = count([cmd, os.path.join(prog_dir, "%s.%s" % (name, ext)), str(n)])
        if ext == "py":
            ref = out
        elif ref is not None and out != ref:
            c = None
        res[ext] = c
        print("  %-13s %-3s %s" % (name, ext, "FAIL" if c is None else "%.1fM" % (c / 1e6)),
              file=sys.stderr, flush=True)
    rows.append((name, n, res))

exts = [e for e, _ in LANGS]
hdr = ["program", "size"] + ["%s Minstr" % e for e in exts]
pairs = [(a, b) for a, b in (("qh", "py"), ("qh", "lua")) if a in exts and b in exts]
for a, b in pairs:
    hdr += ["%s/%s" % (a, b), "%s/%s net" % (a, b)]
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
logs = {k: [] for k in range(2 * len(pairs))}
for name, n, res in rows:
    cells = [name, str(n)] + ["FAIL" if res[e] is None else "%.1f" % (res[e] / 1e6) for e in exts]
    k = 0
    for a, b in pairs:
        if res[a] is None or res[b] is None:
            cells += ["—", "—"]
        else:
            r = res[a] / res[b]
            rn = max(res[a] - empty[a], 1) / max(res[b] - empty[b], 1)
            cells += ["%.2f" % r, "%.2f" % rn]
            if name != "strappend":
                logs[k].append(math.log(r))
                logs[k + 1].append(math.log(rn))
        k += 2
    print("| " + " | ".join(cells) + " |")
cells = ["geometric mean (10 programs)", ""] + [""] * len(exts)
for k in range(2 * len(pairs)):
    cells.append("%.2f" % math.exp(sum(logs[k]) / len(logs[k])) if logs[k] else "—")
print("| " + " | ".join(cells) + " |")
print()
print("Start-up (empty program): " + ", ".join("%s %.1fM" % (e, empty[e] / 1e6) for e in exts) +
      " instructions; 'net' subtracts it.")
PYEOF
