#!/usr/bin/env bash
# Gradient benchmark: 100 gradient-descent steps of a 12-wire, 3-layer
# strongly_entangling_layers circuit (108 parameters, cost
# expval(PauliZ(0) @ PauliZ(1)); tests/bench/grad/sel.qh), by the adjoint
# method and by parameter-shift (2 runs per parameter, 216 circuit runs a
# step), each with background workers (the default) and with --sync.
#
#   tests/bench/grad.sh [PATH/TO/qh]
#
# Prints a Markdown table: method, mode, steps, seconds of the steps (the
# program's own clock(), start-up excluded; best of RUNS runs, default 2),
# seconds per step, the ratio of the per-step time to adjoint's (with
# workers), the final cost, and the tasks qh --stats counted
# (parameter-shift helpers on idle workers show up there). Every run must
# print the same final cost (%.6f) as the adjoint run of the same number of
# steps, else it is reported as FAIL.
#
# If parameter-shift would take too long for 100 steps (a calibration run of
# 3 steps predicts more than BUDGET seconds, default 120, for its RUNS x 2
# modes), its rows use fewer steps, the table says so, and an adjoint run
# of that many steps is added to check the final cost against.
#
# Environment: RUNS (default 2), STEPS (default 100), BUDGET (default 120),
# BENCH_TIMEOUT (seconds per run, default 600), PYTHON (default python3).
# Writes nothing.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
qh=${1:-$root/build/src/qh}
python=${PYTHON:-python3}

if [ ! -x "$qh" ]; then
    echo "error: qh binary not found or not executable: $qh" >&2
    exit 2
fi
if ! command -v "$python" >/dev/null 2>&1; then
    echo "error: $python not found (needed for the timing wrapper)" >&2
    exit 2
fi

exec "$python" - "$here/grad/sel.qh" "$qh" <<'PYEOF'
import os, re, subprocess, sys, time

prog, qh = sys.argv[1:3]
runs = int(os.environ.get("RUNS", "2"))
steps = int(os.environ.get("STEPS", "100"))
budget = float(os.environ.get("BUDGET", "120"))
timeout = float(os.environ.get("BENCH_TIMEOUT", "600"))


def run_once(method, sync, n):
    """(seconds of the steps, wall seconds, final cost string, tasks) or an error string."""
    cmd = [qh, "--stats"] + (["--sync"] if sync else []) + [prog, method, str(n)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout after %gs" % timeout
    wall = time.perf_counter() - t0
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        return "exit %d: %s" % (p.returncode, err[0] if err else "")
    final = re.search(r"^final (\S+)$", out, re.M)
    secs = re.search(r"^seconds (\S+) steps (\d+)$", out, re.M)
    if not final or not secs or int(secs.group(2)) != n:
        return "unexpected output: %r" % out[-200:]
    tasks = re.search(r"qh stats: (\d+) tasks", p.stderr.decode(errors="replace"))
    return float(secs.group(1)), wall, final.group(1), int(tasks.group(1)) if tasks else -1


def measure(method, sync, n):
    best = None
    for _ in range(runs):
        r = run_once(method, sync, n)
        if isinstance(r, str):
            return r
        if best is not None and r[2] != best[2]:
            return "final cost differs between runs: %s vs %s" % (best[2], r[2])
        best = r if best is None or r[0] < best[0] else best
    return best


def mode_name(sync):
    return "--sync" if sync else "workers"


failures = []

# calibration: how long is a parameter-shift step?
ps_steps = steps
cal = run_once("parameter-shift", False, 3)
if isinstance(cal, str):
    failures.append("parameter-shift calibration: " + cal)
else:
    per_step = cal[0] / 3
    predicted = per_step * steps * runs * 2 * 1.3      # both modes; --sync is slower
    print("  calibration: parameter-shift %.3f s/step (workers), %d steps x %d runs x 2 modes ~ %.0f s"
          % (per_step, steps, runs, predicted), file=sys.stderr, flush=True)
    if predicted > budget:
        ps_steps = max(3, int(steps * budget / predicted))

configs = [("adjoint", False, steps), ("adjoint", True, steps),
           ("parameter-shift", False, ps_steps), ("parameter-shift", True, ps_steps)]
if ps_steps != steps:
    configs.append(("adjoint", False, ps_steps))

results = {}
for method, sync, n in configs:
    r = measure(method, sync, n)
    results[(method, sync, n)] = r
    if isinstance(r, str):
        failures.append("%s %s %d steps: %s" % (method, mode_name(sync), n, r))
        print("  %-16s %-8s %4d steps FAIL (%s)" % (method, mode_name(sync), n, r), file=sys.stderr, flush=True)
    else:
        print("  %-16s %-8s %4d steps %8.3f s  final %s" % (method, mode_name(sync), n, r[0], r[2]),
              file=sys.stderr, flush=True)

# the same final cost for the same number of steps
for (method, sync, n), r in results.items():
    ref = results.get(("adjoint", False, n))
    if isinstance(r, str) or ref is None or isinstance(ref, str):
        continue
    if r[2] != ref[2]:
        failures.append("%s %s %d steps: final cost %s, adjoint %s" % (method, mode_name(sync), n, r[2], ref[2]))

base = results.get(("adjoint", False, steps))
base_per = None if base is None or isinstance(base, str) else base[0] / steps

print()
print("| method | mode | steps | seconds | s/step | ratio to adjoint | final cost | tasks |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for method, sync, n in configs:
    if method == "adjoint" and n != steps:
        continue
    r = results[(method, sync, n)]
    if isinstance(r, str):
        print("| %s | %s | %d | FAIL | — | — | — | — |" % (method, mode_name(sync), n))
        continue
    per = r[0] / n
    ratio = "—" if not base_per else "%.1f" % (per / base_per)
    print("| %s | %s | %d | %.3f | %.4f | %s | %s | %d |" % (method, mode_name(sync), n, r[0], per, ratio, r[2], r[3]))
print()
print("12 wires, 3 layers of strongly_entangling_layers (108 parameters), cost expval(PauliZ(0) @ PauliZ(1)),")
print("w = w - 0.1 * grad(cost)(w). Seconds: the steps alone (clock() in the program), best of %d runs." % runs)
print("Ratio: seconds per step against adjoint with workers. Workers: %d online CPUs." % os.cpu_count())
print("Tasks: as qh --stats counts them (one per call, plus one per parameter-shift helper on an idle")
print("worker: with workers, more than steps + 2 tasks means the shifted runs were shared out).")
if ps_steps != steps:
    print("parameter-shift ran %d steps instead of %d to keep the benchmark short (see BUDGET);"
          " its final cost is checked against an adjoint run of %d steps (%s)."
          % (ps_steps, steps, ps_steps,
             "—" if isinstance(results[("adjoint", False, ps_steps)], str) else results[("adjoint", False, ps_steps)][2]))
if failures:
    print()
    print("Failures:")
    for f in failures:
        print("- " + f)
else:
    print("All runs printed the same final cost as adjoint for the same number of steps.")
sys.exit(1 if failures else 0)
PYEOF
