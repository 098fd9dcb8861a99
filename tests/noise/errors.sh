#!/usr/bin/env bash
# Errors of the mixed device, channels, noise models, I/O and OpenQASM
# builtins: each program must fail with exit status 1 (runtime) or 2
# (analysis) and say why on stderr, in both modes (default and --sync).
# Usage: errors.sh PATH/TO/qh
set -u
qh=${1:?usage: errors.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
# check STATUS EXPECTED-STDERR-TEXT PROGRAM
check() {
  local want=$1 text=$2 prog=$3
  for mode in "" "--sync"; do
    printf '%s\n' "$prog" >"$tmp/p.qh"
    (cd "$tmp" && "$qh" $mode p.qh) >"$tmp/out" 2>"$tmp/err" </dev/null
    local st=$?
    if [ "$st" != "$want" ] || ! grep -q -F -- "$text" "$tmp/err"; then
      echo "FAIL ($mode): status $st (want $want), stderr: $(head -c 400 "$tmp/err")"
      echo "  wanted: $text"
      echo "  program: $prog"
      fail=$((fail+1))
    else
      pass=$((pass+1))
    fi
  done
}
M='mix = device("mixed", wires=2)'
check 1 'BitFlip is a noise channel: it needs the mixed device, e.g. device("mixed", wires=1)' \
  'qfn f() on device("statevector", wires=1) { BitFlip(0.1, 0); return 0 }
print(f())'
check 1 'BitFlip: p must be in the interval [0,1], got 1.5' 'print(BitFlip(1.5, 0))'
check 1 'AmplitudeDamping: gamma must be in the interval [0,1], got -0.1' 'print(AmplitudeDamping(-0.1, 0))'
check 1 'ThermalRelaxationError: invalid T_2 relaxation time: T_2 greater than 2 * T_1' 'print(ThermalRelaxationError(0.1, 1, 3, 0.1, 0))'
check 1 'QubitChannel: Kraus matrices are not trace preserving' 'print(QubitChannel([eye(2), eye(2)], 0))'
check 1 'QubitChannel: Kraus matrix 0 must be a 4x4 array for 2 wires' 'print(QubitChannel([eye(2)], [0, 1]))'
check 1 'PauliError: the operators must be X, Y or Z' 'print(PauliError("XQ", 0.1, [0, 1]))'
check 1 'DepolarizingChannel acts on 1 wire, but 2 were given' 'print(DepolarizingChannel(0.1, [0, 1]))'
check 1 'adjoint() of the channel BitFlip: a noise channel has no inverse' 'print(adjoint(BitFlip(0.1, 0)))'
check 1 'matrix(): PhaseFlip is a noise channel' 'print(matrix(PhaseFlip(0.1, 0)))'
check 1 'BitFlip applied outside a quantum function' 'BitFlip(0.1, 0)'
check 1 'AmplitudeDamping: wire 3 out of range for a 2-wire device' "$M"'
qfn f() on mix { AmplitudeDamping(0.1, 3); return 0 }
print(f())'
check 1 'grad(method="adjoint") needs the statevector device' "$M"'
qfn f(t) on mix { RX(t, 0); return expval(PauliZ(0)) }
print(grad(f, method="adjoint")(0.1))'
check 1 'device(): noise= needs the mixed device' 'd = device("statevector", wires=1, noise=nil)
fn nz(op) { return nil }
print(device("statevector", wires=1, noise=nz))'
check 1 'device(): the noise function nz() ' 'fn nz(op) { print(op); return nil }
print(device("mixed", wires=1, noise=nz))'
check 1 'the noise function nz() must return a channel, a list of channels or nil, not number' 'fn nz(op) { return 3 }
qfn f() on device("mixed", wires=1, noise=nz) { Hadamard(0); return 0 }
print(f())'
check 1 'device(): 30 wires is too many for the mixed device' 'print(device("mixed", wires=30))'
check 1 "qasm(): line 3: unknown gate 'foo'" 'c = qasm("OPENQASM 2.0;\nqreg q[1];\nfoo q[0];\n")'
check 1 "qasm_file(): 'b.qasm': line 4: index 5 out of range for 'q' of size 2" 'write_text("b.qasm", "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncx q[0], q[5];\n")
c = qasm_file("b.qasm")'
check 1 'unknown device "dense" (available: "statevector", "mixed")' 'print(device("dense", wires=1))'
check 1 'vn_entropy(): wire 2 out of range for a 2-wire device' "$M"'
qfn f() on mix { return vn_entropy([2]) }
print(f())'
echo "noise errors: $pass passed, $fail failed"
[ "$fail" = 0 ]
