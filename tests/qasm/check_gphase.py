#!/usr/bin/env python3
"""check_gphase.py — controlled global phases against NumPy.

OpenQASM 3's `gphase(a)` multiplies the state by e^{ia}; under `ctrl @` (on
its own or inside a gate definition) it is a phase on the controls' |1..1>.
qh keeps it the same way when a qh program controls an imported circuit,
`ctrl(c, control=w)`, takes its adjoint or its matrix. Each case's expected
state is computed here with NumPy from the gates' matrices (not from any
OpenQASM text) and compared amplitude by amplitude, the global phase
included: the reader through the qasm_state driver, the interpreter in every
mode (default, --sync, --workers 1 and 4, --no-lookahead).

    check_gphase.py QASM_STATE QH
Exit 0 if all agree, 1 if not, 77 (skip) without numpy.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("check_gphase.py: SKIPPED (no numpy)")
    sys.exit(77)

H = np.array([[1, 1], [1, -1]]) / np.sqrt(2)
X = np.array([[0, 1], [1, 0]], dtype=complex)
SX = np.array([[1 + 1j, 1 - 1j], [1 - 1j, 1 + 1j]]) / 2


def RX(t):
    return np.array([[np.cos(t / 2), -1j * np.sin(t / 2)], [-1j * np.sin(t / 2), np.cos(t / 2)]])


def RY(t):
    return np.array([[np.cos(t / 2), -np.sin(t / 2)], [np.sin(t / 2), np.cos(t / 2)]], dtype=complex)


def P(t):
    return np.diag([1, np.exp(1j * t)])


def ctrl(u, k=1, neg=()):
    """u with k controls in front (negative controls: the indices in neg)."""
    d = u.shape[0]
    m = np.eye(d << k, dtype=complex)
    m[-d:, -d:] = u
    for i in neg:  # X on control i around it
        x = np.eye(1, dtype=complex)
        for j in range(k + int(np.log2(d))):
            x = np.kron(x, X if j == i else np.eye(2))
        m = x @ m @ x
    return m


def apply(psi, u, wires, n):
    k = len(wires)
    t = psi.reshape([2] * n)
    t = np.tensordot(u.reshape([2] * (2 * k)), t, axes=(list(range(k, 2 * k)), wires))
    t = np.moveaxis(t, list(range(k)), wires)
    return t.reshape(-1)


def state(n, ops, phase=0.0):
    psi = np.zeros(2 ** n, dtype=complex)
    psi[0] = 1
    for u, w in ops:
        psi = apply(psi, u, w, n)
    return np.exp(1j * phase) * psi


def g(a):  # gate g(a) t { gphase(a); rx(a) t; }
    return np.exp(1j * a) * RX(a)


# (OpenQASM 3 text, number of qubits, expected state)
QASM_CASES = [
    ("qubit[3] q; h q[0]; h q[1];\n"
     "gate g(a) t { gphase(a); rx(a) t; }\n"
     "ctrl @ gphase(0.7) q[0];\n"
     "ctrl @ g(0.4) q[0], q[2];\n"
     "negctrl @ g(1.1) q[1], q[2];\n"
     "ctrl(2) @ gphase(-0.3) q[0], q[1];\n",
     state(3, [(H, [0]), (H, [1]), (P(0.7), [0]), (ctrl(g(0.4)), [0, 2]),
               (ctrl(g(1.1), neg=(0,)), [1, 2]), (ctrl(P(-0.3)), [0, 1])])),
    # a bare gphase: the state's global phase; inv @ negates it
    ("qubit[2] q; h q[1]; gphase(0.25); ry(0.6) q[0]; inv @ gphase(1.5);\n",
     state(2, [(H, [1]), (RY(0.6), [0])], 0.25 - 1.5)),
    # nested definitions: the inner gate's phase under two controls, inverted
    ("qubit[3] q; h q;\n"
     "gate inner a { gphase(pi/3); x a; }\n"
     "gate outer b, c { ctrl @ inner b, c; h c; gphase(-0.2); }\n"
     "ctrl @ outer q[2], q[0], q[1];\n"
     "inv @ ctrl @ outer q[0], q[2], q[1];\n",
     state(3, [(H, [0]), (H, [1]), (H, [2]),
               # ctrl @ outer (q2; q0, q1) = ctrl(ctrl(e^{i pi/3} X) then H then e^{-0.2 i})
               (ctrl(ctrl(np.exp(1j * np.pi / 3) * X)), [2, 0, 1]), (ctrl(H), [2, 1]),
               (P(-0.2), [2]),  # outer's gphase(-0.2) under ctrl on q2
               # inverse of ctrl @ outer (q0; q2, q1): reversed, each inverted
               (P(0.2), [0]), (ctrl(H), [0, 1]),
               (ctrl(ctrl(np.exp(-1j * np.pi / 3) * X)), [0, 2, 1])])),
    # pow(0.5) @ x is SX with its phase: under ctrl, ctrl(SX)
    ("qubit[2] q; h q[0]; ctrl @ pow(0.5) @ x q[0], q[1]; ctrl @ pow(1.5) @ x q[0], q[1];\n",
     state(2, [(H, [0]), (ctrl(SX), [0, 1]), (ctrl(SX @ SX @ SX), [0, 1])])),
]

# The interpreter: imported circuits controlled, inverted, as matrices.
QH_PROGRAM = r'''
c = qasm("OPENQASM 3; include \"stdgates.inc\"; qubit[1] q; gphase(0.7); rx(0.3) q[0];")
d = qasm("OPENQASM 3; include \"stdgates.inc\"; qubit[2] q; gate g(a) t { gphase(a); ry(a) t; } g(0.9) q[1]; cx q[1], q[0]; gphase(-0.4);")
dev = device("statevector", wires=4)
fn show(s) { for a in reshape(s, [-1]) { print(real(a), imag(a)) } }
qfn f1() on dev { Hadamard(0); Hadamard(1); ctrl(c, control=0)(wires=[2]); return state() }
qfn f2() on dev { Hadamard(0); Hadamard(1); Hadamard(3); ctrl(d, control=[0, 3])(wires=[2, 1]); return state() }
qfn f3() on dev { Hadamard(2); ctrl(adjoint(d), control=2)(wires=[0, 1]); adjoint(ctrl(c, control=1))(wires=[3]); return state() }
qfn f4() on dev { Hadamard(1); ctrl(adjoint(ctrl(c, control=1)), control=2)(wires=[0]); Hadamard(2); ctrl(ctrl(c, control=1), control=2)(wires=[3]); return state() }
show(f1())
show(f2())
show(f3())
show(f4())
show(matrix(c))
show(matrix(adjoint(d)))
show(matrix(ctrl(d, control=2), wires=3))
'''


def qh_expected():
    C = np.exp(0.7j) * RX(0.3)
    # d on (q0, q1): g(0.9) on q1 = e^{0.9i} RY(0.9); cx q1 -> q0; gphase(-0.4)
    g1 = np.kron(np.eye(2), np.exp(0.9j) * RY(0.9))
    cx10 = np.array([[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]], dtype=complex)
    D = np.exp(-0.4j) * cx10 @ g1
    out = []
    out.append(state(4, [(H, [0]), (H, [1]), (ctrl(C), [0, 2])]))
    out.append(state(4, [(H, [0]), (H, [1]), (H, [3]), (ctrl(D, 2), [0, 3, 2, 1])]))
    out.append(state(4, [(H, [2]), (ctrl(D.conj().T), [2, 0, 1]), (ctrl(C).conj().T, [1, 3])]))
    out.append(state(4, [(H, [1]), (ctrl(ctrl(C).conj().T), [2, 1, 0]), (H, [2]),
                         (ctrl(ctrl(C)), [2, 1, 3])]))
    out.append(C.reshape(-1))
    out.append(D.conj().T.reshape(-1))
    # matrix(ctrl(d, control=2), wires=3): d on wires 0, 1, controlled by wire 2
    m = np.zeros((8, 8), dtype=complex)
    cd = ctrl(D)  # order (2, 0, 1)
    for col in range(8):
        e = np.zeros(8, dtype=complex)
        e[col] = 1
        m[:, col] = apply(e, cd, [2, 0, 1], 3)
    out.append(m.reshape(-1))
    return np.concatenate(out)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    driver, qh = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (text, want) in enumerate(QASM_CASES):
            path = os.path.join(tmp, f"case{i}.qasm")
            with open(path, "w") as fh:
                fh.write('OPENQASM 3;\ninclude "stdgates.inc";\n' + text)
            r = subprocess.run([driver, path], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL qasm case {i}: {r.stderr.strip()}")
                failed += 1
                continue
            lines = r.stdout.split("\n")
            nq = int(lines[0])
            got = np.array([complex(float(x.split()[0]), float(x.split()[1]))
                            for x in lines[1:1 + 2 ** nq]])
            err = np.max(np.abs(got - want)) if got.shape == want.shape else float("inf")
            ok = err < 1e-12
            print(f"{'ok  ' if ok else 'FAIL'} qasm case {i}: max diff {err:.2e}")
            failed += not ok
        prog = os.path.join(tmp, "gphase.qh")
        with open(prog, "w") as fh:
            fh.write(QH_PROGRAM)
        want = qh_expected()
        for mode in ([], ["--sync"], ["--workers", "1"], ["--workers", "4"], ["--no-lookahead"]):
            r = subprocess.run([qh] + mode + [prog], capture_output=True, text=True)
            name = " ".join(mode) or "default"
            if r.returncode != 0:
                print(f"FAIL qh {name}: {r.stderr.strip()}")
                failed += 1
                continue
            got = np.array([complex(float(l.split()[0]), float(l.split()[1]))
                            for l in r.stdout.split("\n") if l.strip()])
            err = np.max(np.abs(got - want)) if got.shape == want.shape else float("inf")
            ok = err < 1e-12
            print(f"{'ok  ' if ok else 'FAIL'} qh {name}: {len(got)} amplitudes, max diff {err:.2e}")
            failed += not ok
    print("all agree" if not failed else f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
