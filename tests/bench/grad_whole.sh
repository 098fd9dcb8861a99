#!/usr/bin/env bash
# Issue 15's gradient figures (tests/bench/grad_whole/*.qh):
#
#  1. parameter-shift: the gradient of a cost summing 8 independent 12-wire
#     circuits (108 parameters, cost8.qh) with --workers 2 against
#     --workers 1 (bar: >= 1.8x faster), and --sync beside them;
#  2. adjoint: the same gradient against one forward evaluation of the
#     cost (bar: <= 4x), both with --workers 2;
#  3. the classical part of reverse mode: the gradient of a 10,000-operation
#     classical function against its evaluation (classical.qh; bar: <= 5x).
#
#   tests/bench/grad_whole.sh [PATH/TO/qh]
#
# Seconds are the programs' own clock() per evaluation (start-up and one
# warm-up call excluded), best of RUNS runs (default 3). Every run of a
# gradient must print the same checksum (the sum of the gradient, %.10f) in
# every mode: the result does not depend on the workers.
#
# CALLGRIND=1 adds instruction counts under valgrind (--sync, the
# difference between REPS and 3*REPS calls, so start-up cancels): the
# repeatable form of figures 2 and 3 on a loaded machine.
#
# Environment: RUNS (default 3), REPS (calls per run: default 20 for the
# quantum cost, 200 for the classical one), CALLGRIND, PYTHON.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
qh=${1:-$root/build/src/qh}
python=${PYTHON:-python3}
if [ ! -x "$qh" ]; then
    echo "error: qh binary not found or not executable: $qh" >&2
    exit 2
fi

exec "$python" - "$here/grad_whole" "$qh" <<'PYEOF'
import os, re, subprocess, sys

d, qh = sys.argv[1:3]
runs = int(os.environ.get("RUNS", "3"))
reps_q = int(os.environ.get("REPS", "20"))
reps_c = int(os.environ.get("REPS", "200"))
cost8, classical = os.path.join(d, "cost8.qh"), os.path.join(d, "classical.qh")
failures = []


def run(prog, mode, reps, flags):
    cmd = [qh] + flags + [prog, mode, str(reps)]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)
    m = re.search(r"^(\S+) (\S+) (\S+)$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, (p.stderr or p.stdout)[-300:]))
    return float(m.group(2)), m.group(3)


def best(prog, mode, reps, flags):
    secs, chk = None, None
    for _ in range(runs):
        s, c = run(prog, mode, reps, flags)
        if chk is not None and c != chk:
            failures.append("%s %s %s: checksum %s then %s" % (os.path.basename(prog), mode, flags, chk, c))
        chk = c
        secs = s if secs is None else min(secs, s)
    return secs, chk


def instructions(prog, mode, reps):
    """instructions per call under callgrind (--sync), start-up cancelled"""
    counts = []
    for n in (reps, 3 * reps):
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", qh, "--sync",
                            prog, mode, str(n)], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode != 0 or not m:
            raise RuntimeError("callgrind %s %s: %s" % (prog, mode, p.stderr[-300:]))
        counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / (2 * reps)


rows = []
ps1, c1 = best(cost8, "parameter-shift", reps_q, ["--workers", "1"])
ps2, c2 = best(cost8, "parameter-shift", reps_q, ["--workers", "2"])
pss, cs = best(cost8, "parameter-shift", reps_q, ["--sync"])
if not (c1 == c2 == cs):
    failures.append("parameter-shift gradients differ: workers 1 %s, workers 2 %s, --sync %s" % (c1, c2, cs))
fw, _ = best(cost8, "forward", reps_q, ["--workers", "2"])
ad, ca = best(cost8, "adjoint", reps_q, ["--workers", "2"])
ads, cas = best(cost8, "adjoint", reps_q, ["--sync"])
if ca != cas:
    failures.append("adjoint gradients differ: workers %s, --sync %s" % (ca, cas))
fws, _ = best(cost8, "forward", reps_q, ["--sync"])
ev, _ = best(classical, "eval", reps_c, ["--workers", "2"])
gr, cg = best(classical, "grad", reps_c, ["--workers", "2"])
grs, cgs = best(classical, "grad", reps_c, ["--sync"])
if cg != cgs:
    failures.append("classical gradients differ: workers %s, --sync %s" % (cg, cgs))
evs, _ = best(classical, "eval", reps_c, ["--sync"])

def verdict(ok):
    return "yes" if ok else "**no**"

print("| figure | measured | bar | met |")
print("|---|---|---|---|")
sp = ps1 / ps2
print("| parameter-shift gradient of cost8 (108 parameters): --workers 1 / --workers 2 | %.4f s / %.4f s = **%.2fx** | >= 1.8x | %s |"
      % (ps1, ps2, sp, verdict(sp >= 1.8)))
print("| (beside it) parameter-shift with --sync | %.4f s (%.2fx of --workers 1) | — | — |" % (pss, pss / ps1))
r = ad / fw
print("| adjoint gradient / one forward evaluation of cost8 (--workers 2) | %.4f s / %.4f s = **%.2fx** | <= 4x | %s |"
      % (ad, fw, r, verdict(r <= 4)))
print("| (beside it) the same with --sync | %.4f s / %.4f s = %.2fx | — | — |" % (ads, fws, ads / fws))
r = gr / ev
print("| gradient / evaluation of a 10,000-operation classical function (--workers 2) | %.6f s / %.6f s = **%.2fx** | <= 5x | %s |"
      % (gr, ev, r, verdict(r <= 5)))
print("| (beside it) the same with --sync | %.6f s / %.6f s = %.2fx | — | — |" % (grs, evs, grs / evs))

if os.environ.get("CALLGRIND"):
    print()
    print("| instructions per call (callgrind, --sync) | ratio |")
    print("|---|---|")
    f_i = instructions(cost8, "forward", 2)
    a_i = instructions(cost8, "adjoint", 2)
    print("| cost8: adjoint gradient %.2fM / forward %.2fM | %.2fx |" % (a_i / 1e6, f_i / 1e6, a_i / f_i))
    e_i = instructions(classical, "eval", 20)
    g_i = instructions(classical, "grad", 20)
    print("| classical: gradient %.2fM / evaluation %.2fM | %.2fx |" % (g_i / 1e6, e_i / 1e6, g_i / e_i))

print()
print("Seconds per call: the program's clock(), best of %d runs of %d (quantum) or %d (classical) calls," % (runs, reps_q, reps_c))
print("after one warm-up call. %d CPUs online; run on a quiet machine." % os.cpu_count())
if failures:
    print()
    print("Failures:")
    for f in failures:
        print("- " + f)
    sys.exit(1)
print("Every gradient printed the same checksum in every mode (the result does not depend on the workers).")
PYEOF
