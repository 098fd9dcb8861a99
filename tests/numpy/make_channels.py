#!/usr/bin/env python3
"""Makes grad_channels_numpy.qh/.out: gradients of channel parameters on the
mixed device against an independent density-matrix simulation in
python3-numpy. The channels are PennyLane's Kraus matrices as its
documentation states them (ThermalRelaxationError as the map its Choi
matrix defines: populations relax to pe with probability 1 - exp(-tq/T1),
coherences shrink by exp(-tq/T2)); the derivatives are Richardson-
extrapolated central differences (error ~1e-12). The script checks qh's
exact Jacobians within 1e-9 and prints them rounded to 6 digits. Run from
this folder: python3 make_channels.py (the outputs are stored; meson test
compares)."""
import numpy as np

from qhfmt import Script

I2 = np.eye(2, dtype=complex)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
Z = np.array([[1, 0], [0, -1]], dtype=complex)


def rx(t):
    c, s = np.cos(t / 2), np.sin(t / 2)
    return np.array([[c, -1j * s], [-1j * s, c]])


def ry(t):
    c, s = np.cos(t / 2), np.sin(t / 2)
    return np.array([[c, -s], [s, c]], dtype=complex)


def rz(t):
    return np.diag([np.exp(-0.5j * t), np.exp(0.5j * t)])


CNOT = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], dtype=complex)


def on(m, w):
    """A one-wire matrix on wire w of two (wire 0 the most significant)."""
    return np.kron(m, I2) if w == 0 else np.kron(I2, m)


def gate(rho, u):
    return u @ rho @ u.conj().T


def kraus(rho, ks, wires):
    out = np.zeros_like(rho)
    for k in ks:
        K = k if len(wires) == 2 else on(k, wires[0])
        out += K @ rho @ K.conj().T
    return out


def bitflip(p):
    return [np.sqrt(1 - p) * I2, np.sqrt(p) * X]


def phaseflip(p):
    return [np.sqrt(1 - p) * I2, np.sqrt(p) * Z]


def depol(p):
    return [np.sqrt(1 - p) * I2] + [np.sqrt(p / 3) * P for P in (X, Y, Z)]


def ampdamp(g):
    return [np.array([[1, 0], [0, np.sqrt(1 - g)]]), np.array([[0, np.sqrt(g)], [0, 0]])]


def phasedamp(g):
    return [np.array([[1, 0], [0, np.sqrt(1 - g)]]), np.array([[0, 0], [0, np.sqrt(g)]])]


def genamp(g, p):
    return [np.sqrt(p) * np.array([[1, 0], [0, np.sqrt(1 - g)]]),
            np.sqrt(p) * np.array([[0, np.sqrt(g)], [0, 0]]),
            np.sqrt(1 - p) * np.array([[np.sqrt(1 - g), 0], [0, 1]]),
            np.sqrt(1 - p) * np.array([[0, 0], [np.sqrt(g), 0]])]


def reseterr(p0, p1):
    e = lambda i, j: np.outer(np.eye(2)[i], np.eye(2)[j])
    return [np.sqrt(1 - p0 - p1) * I2, np.sqrt(p0) * e(0, 0), np.sqrt(p0) * e(0, 1),
            np.sqrt(p1) * e(1, 0), np.sqrt(p1) * e(1, 1)]


def paulierr(p):
    return [np.sqrt(1 - p) * np.eye(4), np.sqrt(p) * np.kron(X, Y)]


def thermal(rho, pe, t1, t2, tq):
    """On wire 0: eps(|0><0|) = (1 - pe pr)|0><0| + pe pr |1><1|,
    eps(|1><1|) = (1 - pe) pr |0><0| + (1 - (1 - pe) pr)|1><1|, eps(|0><1|) = eT2 |0><1|."""
    pr, eT2 = 1 - np.exp(-tq / t1), np.exp(-tq / t2)
    r = rho.reshape(2, 2, 2, 2)  # (row wire 0, row wire 1, column wire 0, column wire 1)
    out = np.zeros_like(r)
    out[0, :, 0, :] = (1 - pe * pr) * r[0, :, 0, :] + (1 - pe) * pr * r[1, :, 1, :]
    out[1, :, 1, :] = pe * pr * r[0, :, 0, :] + (1 - (1 - pe) * pr) * r[1, :, 1, :]
    out[0, :, 1, :] = eT2 * r[0, :, 1, :]
    out[1, :, 0, :] = eT2 * r[1, :, 0, :]
    return out.reshape(4, 4)


def run(channel, x):
    rho = np.zeros((4, 4), dtype=complex)
    rho[0, 0] = 1
    for u in (on(rx(0.7), 0), on(ry(0.4), 0), on(rz(0.3), 0), CNOT, on(ry(0.2), 1)):
        rho = gate(rho, u)
    rho = channel(rho, x)
    rho = gate(rho, on(ry(0.5), 0))
    obs = [on(X, 0), on(Y, 0), on(Z, 0), np.kron(X, Z)]
    return np.array([np.trace(rho @ o).real for o in obs] + list(np.diag(rho).real))


def jac(channel, x):
    x = np.atleast_1d(np.array(x, dtype=float))
    cols = []
    for i in range(len(x)):
        def d(h):
            e = np.zeros(len(x))
            e[i] = h
            return (run(channel, x + e) - run(channel, x - e)) / (2 * h)
        h = 1e-3
        cols.append((4 * d(h / 2) - d(h)) / 3)
    return np.stack(cols, axis=-1)


CASES = [
    ("BitFlip", "BitFlip(x, 0)", 0.3, lambda r, x: kraus(r, bitflip(x[0]), [0])),
    ("PhaseFlip", "PhaseFlip(x, 0)", 0.3, lambda r, x: kraus(r, phaseflip(x[0]), [0])),
    ("DepolarizingChannel", "DepolarizingChannel(x, 0)", 0.3, lambda r, x: kraus(r, depol(x[0]), [0])),
    ("AmplitudeDamping", "AmplitudeDamping(x, 0)", 0.3, lambda r, x: kraus(r, ampdamp(x[0]), [0])),
    ("PhaseDamping", "PhaseDamping(x, 0)", 0.3, lambda r, x: kraus(r, phasedamp(x[0]), [0])),
    ("PauliError", "PauliError(\"XY\", x, wires=[0, 1])", 0.3, lambda r, x: kraus(r, paulierr(x[0]), [0, 1])),
    ("GeneralizedAmplitudeDamping", "GeneralizedAmplitudeDamping(x[0], x[1], 0)", [0.3, 0.6],
     lambda r, x: kraus(r, genamp(x[0], x[1]), [0])),
    ("ResetError", "ResetError(x[0], x[1], 0)", [0.2, 0.3], lambda r, x: kraus(r, reseterr(x[0], x[1]), [0])),
    ("ThermalRelaxationError", "ThermalRelaxationError(x[0], x[1], x[2], x[3], 0)", [0.2, 1.5, 1.1, 0.4],
     lambda r, x: thermal(r, *x)),
    ("ThermalRelaxationError", "ThermalRelaxationError(x[0], x[1], x[2], x[3], 0)", [0.3, 1.0, 1.6, 0.5],
     lambda r, x: thermal(r, *x)),
]


def main():
    s = Script("""
Exact gradients of channel parameters on the mixed device against an
independent density-matrix simulation in python3-numpy (Richardson-
extrapolated central differences): made by make_channels.py; do not edit.""")
    s.code("mix = device(\"mixed\", wires=2)")
    s.code("fn close(a, b) { return max(cumsum(abs(a - b))) < 1e-9 }")
    for k, (name, stmt, x, ch) in enumerate(CASES):
        J = jac(ch, x)
        if not isinstance(x, list):
            J = J[:, 0]
        s.code("qfn c%d(x) on mix {" % k)
        s.code("    RX(0.7, 0); RY(0.4, 0); RZ(0.3, 0); CNOT(0, 1); RY(0.2, 1)")
        s.code("    %s" % stmt)
        s.code("    RY(0.5, 0)")
        s.code("    return concatenate([array([expval(PauliX(0)), expval(PauliY(0)), expval(PauliZ(0)), "
               "expval(PauliX(0) @ PauliZ(1))]), probs()])")
        s.code("}")
        xs = ("array(%r)" % x) if isinstance(x, list) else repr(x)
        s.code("J = jacobian(c%d)(%s)" % (k, xs))
        s.code("REF = array(%s)" % np.array2string(J, separator=", ", precision=17, floatmode="unique",
                                                   threshold=10**6, max_line_width=10**6))
        s.show("\"%s\", close(J, REF)" % name, "%s true" % name)
        s.show("round(J, 6) + 0", np.round(J, 6) + 0.0)
    s.write("grad_channels_numpy")


if __name__ == "__main__":
    main()
