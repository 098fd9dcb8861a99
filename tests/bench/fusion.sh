#!/usr/bin/env bash
# fusion.sh — issue 27's figures: fused and cache-blocked circuits against
# the same circuits gate by gate (--no-fusion), side by side in one run.
#
#   bash tests/bench/fusion.sh [QH] [--sizes 20,22,24] [--threads 1,2] [--reps R]
#                              [--qsim PATH] [--qulacs PATH] [--base QH] [--cpu] [--callgrind]
#
# Workloads (the same circuits for every simulator, written by this script):
#   layered  10 layers of RX on every wire and a CNOT ladder (0-1, 1-2, ...)
#   random   20 layers of a random 1-qubit gate (RX, RY, RZ, H) on every
#            wire and a random 2-qubit gate (CNOT, CZ, ISWAP, CRZ) on a
#            random pairing of the wires (seeded: the same circuit each run)
#   qft      a product state (RX on every wire), then the QFT: Hadamard and
#            the controlled phases, and the final swaps
# at each size and thread count (1 thread: qh under `taskset -c 0`; 2:
# both CPUs, the call's kernels on a team of two). Each time is the best of
# R runs (default 1) of the call alone, measured inside the program with
# clock() (start-up and the interpreter's set-up excluded). With --cpu
# (perf on PATH) every one-thread time, qh's and the peers', is instead
# the CPU time of the whole process (perf stat's task-clock: start-up,
# allocation and parsing included, the same for each side), which a
# machine loaded by other work disturbs far less than a wall clock; the
# two-thread times stay wall clock. Columns: fused
# and --no-fusion seconds and their ratio with the bar (<= 0.33 on layered
# and random, <= 1.0 on qft), and the passes over the state per gate that
# --stats reports for the fused run (bar <= 0.3 on layered at 24 wires).
# A peer given by path (--qsim: qsim's qsim_base, --qulacs: a program that
# takes "CIRCUIT THREADS", CIRCUIT in qsim's format as written here, and
# prints the seconds its simulation took, e.g. a driver of qulacs' csim
# kernels) runs the same circuits, pinned like qh, best of R runs, and
# gets its column and our ratio to it (bars: <= 1.0 x qsim, <= 0.5 x
# qulacs); a peer not given is skipped. Build them outside the repository
# (DEVELOPERS.md); never commit their code. Last, the interpreter's own cost
# per applied gate: a 10-wire circuit (2000 layers of RX on every wire and
# a CNOT ladder) through a qfn, its time per gate less the C entry point's
# (bench_gatecost beside qh's build: ninja -C build
# tests/bench/bench_gatecost), fused (the default) and --no-fusion, and
# with --base QH an earlier build's qh on the same program (bar: unchanged
# or lower); with --callgrind the same in instructions per gate under
# valgrind (the 100- and the 200-layer circuit, their difference: the same
# figure on a busy machine). The machine is shared: the figures
# are provisional (print `uptime` beside them).
set -u
qh=build/src/qh
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then qh=$1; shift; fi
sizes=20,22,24 threads=1,2 reps=1 qsim="" qulacs="" base="" cpu=0 cg=0
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --qsim) qsim=$2; shift 2 ;;
    --qulacs) qulacs=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --callgrind) cg=1; shift ;;
    *) echo "fusion.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$qh" ] || { echo "fusion.sh: no qh at $qh" >&2; exit 2; }
# the peers' OpenMP threads sleep while they wait: spinning, a peer on a
# shared machine crawled (qulacs, 2 threads, 16 wires: 8.5 s for 0.03 s of work)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The circuits, as qh programs (N from argv) and as qsim circuit files.
python3 - "$tmp" "$sizes" <<'EOF'
import math, random, sys
tmp, sizes = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
head = 'n = int(argv[0])\ndev = device("statevector", wires=n)\n'
tail = 't0 = clock()\nr = circuit(0.3)\nwait(r)\nt = clock() - t0\nprint(fmt("time %.6f", t), fmt("%.9f", r))\n'
with open(tmp + "/layered.qh", "w") as f:
    f.write(head + """qfn circuit(theta) on dev {
    for l in range(10) {
        for w in range(n) { RX(theta + 0.01 * (l * n + w), w) }
        for w in range(n - 1) { CNOT(w, w + 1) }
    }
    return expval(PauliZ(n - 1))
}
""" + tail)
with open(tmp + "/qft.qh", "w") as f:
    f.write(head + """qfn circuit(x) on dev {
    for i in range(n) { RX(0.1 * (i + 1) + x, i) }
    for i in range(n) {
        Hadamard(i)
        for j in range(i + 1, n) { ControlledPhaseShift(pi / 2 ** (j - i), j, i) }
    }
    for i in range(n // 2) { SWAP(i, n - 1 - i) }
    return expval(PauliZ(0))
}
""" + tail)
def random_ops(n):
    r = random.Random(2027 + n)
    ops = []
    for l in range(20):
        for w in range(n):
            g = r.choice(["RX", "RY", "RZ", "H"])
            ops.append((g, [w], [r.uniform(-math.pi, math.pi)] if g != "H" else []))
        ws = list(range(n)); r.shuffle(ws)
        for k in range(0, n - 1, 2):
            g = r.choice(["CNOT", "CZ", "ISWAP", "CRZ"])
            ops.append((g, [ws[k], ws[k + 1]], [r.uniform(-math.pi, math.pi)] if g == "CRZ" else []))
    return ops
qhname = {"H": "Hadamard"}
for n in sizes:
    ops = random_ops(n)
    with open("%s/random%d.qh" % (tmp, n), "w") as f:
        f.write(head + "qfn circuit(theta) on dev {\n")
        for g, w, p in ops:
            f.write("    %s(%s)\n" % (qhname.get(g, g), ", ".join(["%.12f" % x for x in p] + [str(x) for x in w])))
        f.write("    return expval(PauliZ(n - 1))\n}\n" + tail)
    # qsim's circuit format: the qubit count, then "time gate qubits... params..."
    # (qsim numbers qubits from the least significant bit: wire w is qubit n-1-w)
    def q(w): return str(n - 1 - w)
    name = {"H": "h", "RX": "rx", "RY": "ry", "RZ": "rz", "CNOT": "cx", "CZ": "cz", "ISWAP": "is", "CRZ": None}
    with open("%s/random%d.qsim" % (tmp, n), "w") as f:
        f.write("%d\n" % n)
        t = 0
        for g, w, p in ops:
            if g == "CRZ":  # qsim has cp (controlled phase); CRZ = RZ(t/2) on target, CX, RZ(-t/2), CX
                f.write("%d rz %s %.12f\n%d cx %s %s\n%d rz %s %.12f\n%d cx %s %s\n" % (
                    t, q(w[1]), p[0] / 2, t + 1, q(w[0]), q(w[1]), t + 2, q(w[1]), -p[0] / 2, t + 3, q(w[0]), q(w[1])))
                t += 4
            else:
                f.write("%d %s %s%s\n" % (t, name[g], " ".join(q(x) for x in w), "".join(" %.12f" % x for x in p)))
                t += 1
    with open("%s/layered%d.qsim" % (tmp, n), "w") as f:
        f.write("%d\n" % n); t = 0
        for l in range(10):
            for w in range(n):
                f.write("%d rx %s %.12f\n" % (t, q(w), 0.3 + 0.01 * (l * n + w))); t += 1
            for w in range(n - 1):
                f.write("%d cx %s %s\n" % (t, q(w), q(w + 1))); t += 1
    with open("%s/qft%d.qsim" % (tmp, n), "w") as f:
        f.write("%d\n" % n); t = 0
        for i in range(n):
            f.write("%d rx %s %.12f\n" % (t, q(i), 0.1 * (i + 1) + 0.3)); t += 1
        for i in range(n):
            f.write("%d h %s\n" % (t, q(i))); t += 1
            for j in range(i + 1, n):
                # qsim's cp is diag(1, 1, 1, exp(-i phi)) (lib/gates_qsim.h), qh's
                # ControlledPhaseShift exp(+i phi): the same gate is cp -phi
                f.write("%d cp %s %s %.12f\n" % (t, q(j), q(i), -math.pi / 2 ** (j - i))); t += 1
        for i in range(n // 2):
            f.write("%d sw %s %s\n" % (t, q(i), q(n - 1 - i))); t += 1
EOF

# ptime THREADS CMD...: runs CMD (its stdout on ours); with --cpu and one
# thread, leaves its task-clock in seconds in $tmp/cpu, else nothing there
ptime() {
  local t=$1; shift
  rm -f "$tmp/cpu"
  if [ "$cpu" = 1 ] && [ "$t" = 1 ]; then
    perf stat -x, -o "$tmp/ps" -e task-clock "$@" || return 1
    awk -F, '/task-clock/ { printf "%.6f", $1 / 1000 }' "$tmp/ps" >"$tmp/cpu"
  else
    "$@"
  fi
}

# best time of `reps` runs of qh (fused or not) on a workload; also the
# passes per gate of the last run
run_qh() {   # WORKLOAD N THREADS MODE(fused|unfused) -> "seconds passes_per_gate"
  local w=$1 n=$2 t=$3 mode=$4 prog best="" pp="-" out
  prog=$tmp/$w.qh; [ "$w" = random ] && prog=$tmp/random$n.qh
  local pin=(); [ "$t" = 1 ] && pin=(taskset -c 0)
  local flag=(); [ "$mode" = unfused ] && flag=(--no-fusion)
  for r in $(seq 1 "$reps"); do
    out=$(ptime "$t" "${pin[@]}" "$qh" "${flag[@]}" --stats "$prog" "$n" 2>&1) || { echo "fail -"; return; }
    local s; s=$(echo "$out" | sed -n 's/^time \([0-9.]*\).*/\1/p')
    [ -s "$tmp/cpu" ] && s=$(cat "$tmp/cpu")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$s; fi
    pp=$(echo "$out" | sed -n 's/.*(\([0-9.]*\) passes per gate.*/\1/p')
  done
  echo "$best ${pp:--}"
}

# qsim's best time: its fusion limit 2 to 5 (-f), the best of reps runs
# each; the simulation time qsim_base itself reports with -v 1 ("simu time is"),
# else the process's wall time
run_qsim() {   # WORKLOAD N THREADS -> seconds
  local best="" f=$tmp/$1$2.qsim fs
  for fs in 2 3 4 5; do
    for r in $(seq 1 "$reps"); do
      local t0 t1 s out
      local pin=(); [ "$3" = 1 ] && pin=(taskset -c 0)
      t0=$(date +%s.%N); out=$(ptime "$3" "${pin[@]}" "$qsim" -c "$f" -d 1000 -t "$3" -f "$fs" -v 1 2>&1) || { echo fail; return; }
      t1=$(date +%s.%N)
      s=$(echo "$out" | sed -n 's/^simu time is \([0-9.e+-]*\) seconds.*/\1/p' | tail -1)
      [ -s "$tmp/cpu" ] && s=$(cat "$tmp/cpu")
      [ -n "$s" ] || s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", b - a}')
      if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$s; fi
    done
  done
  echo "$best"
}

# qulacs' best time (the driver's own figure), best of reps
run_qulacs() {   # WORKLOAD N THREADS -> seconds
  local best="" s r pin=(); [ "$3" = 1 ] && pin=(taskset -c 0)
  for r in $(seq 1 "$reps"); do
    s=$(ptime "$3" "${pin[@]}" "$qulacs" "$tmp/$1$2.qsim" "$3" 2>/dev/null | tail -1) || { echo fail; return; }
    [ -s "$tmp/cpu" ] && s=$(cat "$tmp/cpu")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$s; fi
  done
  echo "$best"
}

echo "fusion.sh: $("$qh" --version), $(nproc) CPUs; load: $(uptime | sed 's/.*load/load/')"
[ "$cpu" = 1 ] && echo "times: one thread, CPU seconds of the whole process (perf stat task-clock); two threads, wall seconds"
printf '%-8s %3s %3s %10s %10s %7s %5s %8s %s\n' workload n thr fused unfused ratio bar "pass/g" peers
unblocked=0
for w in layered random qft; do
  for n in ${sizes//,/ }; do
    for t in ${threads//,/ }; do
      read -r fs pp < <(run_qh "$w" "$n" "$t" fused)
      read -r us _ < <(run_qh "$w" "$n" "$t" unfused)
      ratio=$(awk -v a="$fs" -v b="$us" 'BEGIN{ if (b > 0) printf "%.3f", a / b; else print "-" }')
      bar=0.33; [ "$w" = qft ] && bar=1.0
      verdict=$(awk -v r="$ratio" -v b="$bar" 'BEGIN{ print (r <= b) ? "ok" : "MISS" }')
      [ "$pp" = 1.000 ] && { verdict="$verdict*"; unblocked=1; }
      peers=""
      if [ -n "$qsim" ] && [ -x "$qsim" ]; then
        qs=$(run_qsim "$w" "$n" "$t")
        peers="qsim $qs s (qh/qsim $(awk -v a="$fs" -v b="$qs" 'BEGIN{printf "%.2f", a / b}'), bar 1.0)"
      fi
      if [ -n "$qulacs" ] && [ -x "$qulacs" ]; then
        ql=$(run_qulacs "$w" "$n" "$t")
        peers="$peers qulacs $ql s (qh/qulacs $(awk -v a="$fs" -v b="$ql" 'BEGIN{printf "%.2f", a / b}'), bar 0.5)"
      fi
      printf '%-8s %3s %3s %10s %10s %7s %5s %8s %s\n' "$w" "$n" "$t" "$fs" "$us" "$ratio" "$verdict" "$pp" "$peers"
    done
  done
done

# The interpreter's own cost per gate.
cat >"$tmp/cost.qh" <<'EOF2'
dev = device("statevector", wires=10)
qfn circuit(layers) on dev {
    for l in range(layers) {
        for w in range(10) { RX(0.01 * (l * 10 + w), w) }
        for w in range(9) { CNOT(w, w + 1) }
    }
    return expval(PauliZ(9))
}
best = 1e9
for rep in range(5) {
    t0 = clock()
    r = circuit(2000)
    wait(r)
    t = clock() - t0
    if t < best { best = t }
}
print(fmt("ns_per_gate %.1f", best / (2000 * 19) * 1e9))
EOF2
[ "$unblocked" = 1 ] && echo "*: not blocked (a state below the blocking threshold, QH_FUSION_MIN, 21 qubits by default): fused and unfused run the same path, their ratio is the noise between runs"
gatecost=$(dirname "$qh")/../tests/bench/bench_gatecost
cost() { "$@" "$tmp/cost.qh" 2>/dev/null | sed -n 's/^ns_per_gate //p'; }
if [ -x "$gatecost" ]; then
  c=$(taskset -c 0 "$gatecost" | sed -n 's/^ns_per_gate //p')
  f=$(cost taskset -c 0 "$qh" --sync); u=$(cost taskset -c 0 "$qh" --sync --no-fusion)
  echo "gate cost, 10 wires, one thread: C entry point $c ns/gate; qh fused $f ns/gate (own cost $(awk -v a="$f" -v b="$c" 'BEGIN{printf "%.1f", a - b}')), --no-fusion $u ns/gate (own cost $(awk -v a="$u" -v b="$c" 'BEGIN{printf "%.1f", a - b}'))"
  if [ -n "$base" ] && [ -x "$base" ]; then
    b=$(cost taskset -c 0 "$base" --sync)
    echo "  base $base: $b ns/gate (own cost $(awk -v a="$b" -v b="$c" 'BEGIN{printf "%.1f", a - b}')): bar, own cost unchanged or lower"
  fi
else
  echo "gate cost: no $gatecost (ninja -C build tests/bench/bench_gatecost): skipped"
fi
# the same in instructions (callgrind: the same figure on a busy machine):
# the circuit of 100 and of 200 layers, the difference per gate (start-up
# and set-up cancel); the C entry point's 5 repetitions likewise
if [ "$cg" = 1 ] && command -v valgrind >/dev/null && [ -x "$gatecost" ]; then
  sed -e 's/^best = 1e9$/layers = int(argv[0])/' -e 's/^for rep in range(5) {$/if true {/' \
      -e 's/circuit(2000)/circuit(layers)/' -e 's/^    if t < best.*$//' -e 's/^print(.*$//' \
      "$tmp/cost.qh" >"$tmp/cost_cg.qh"
  instr() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
              sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
  per_gate() {   # PROGRAM...: instructions per gate (layers appended)
    local a b; a=$(instr "$@" 100); b=$(instr "$@" 200)
    awk -v a="$a" -v b="$b" -v k="$reps_cg" 'BEGIN{printf "%.0f", (b - a) / (100 * 19 * k)}'
  }
  reps_cg=5; ci=$(per_gate "$gatecost")
  reps_cg=1; qi=$(per_gate "$qh" --sync "$tmp/cost_cg.qh")
  line="gate cost in instructions (callgrind): C entry point $ci per gate; qh $qi (own cost $((qi - ci)))"
  if [ -n "$base" ] && [ -x "$base" ]; then
    bi=$(per_gate "$base" --sync "$tmp/cost_cg.qh")
    line="$line; base $bi (own cost against this C entry point $((bi - ci))): bar, unchanged or lower"
  fi
  echo "$line"
fi
echo "load after: $(uptime | sed 's/.*load/load/')"
