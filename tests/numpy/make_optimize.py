#!/usr/bin/env python3
"""Makes optimize_pennylane.qh/.out: stdlib/optimize's step functions
against PennyLane's update formulas (pennylane.optimize: GradientDescent,
Momentum, NesterovMomentum, Adagrad, RMSProp, Adam, QNG), evaluated here
with python3-numpy in the order PennyLane evaluates them, on a gradient of
plain arithmetic (exact in IEEE arithmetic on both sides) and a fixed
metric. Run from this folder: python3 make_optimize.py (the outputs are
stored; meson test compares)."""
import numpy as np

from qhfmt import Script

X0 = np.array([0.3, -1.2, 0.8, 2.1])
C = np.array([0.25, -0.5, 1.5, -0.75])
STEPS = 6


def grad(x):
    return 0.5 * x * x * x - x + C


def gd(x, lr):
    return x - lr * grad(x)


def run(s, name, call, steps):
    s.code("x = X0")
    s.code("st = nil")
    s.code("for k in range(%d) { %s }" % (steps, call))
    return "x"


def main():
    s = Script("""
stdlib/optimize's steps against PennyLane's update formulas, evaluated by
python3-numpy in PennyLane's order: made by make_optimize.py; do not edit.""")
    s.code("import optimize")
    s.code("X0 = array(%s)" % X0.tolist())
    s.code("C = array(%s)" % C.tolist())
    s.code("fn g(x) { return 0.5 * x * x * x - x + C }")

    for lr in [0.1, 0.03]:
        x = X0.copy()
        for _ in range(STEPS):
            x = x - lr * grad(x)
        s.code("x = X0")
        s.code("for k in range(%d) { x = optimize.gd(g, x, lr=%r) }" % (STEPS, lr))
        s.show("x", x)

        # MomentumOptimizer: a = m a + lr g; x = x - a
        for beta in [0.9, 0.5]:
            x, a = X0.copy(), 0.0
            for _ in range(STEPS):
                a = beta * a + lr * grad(x)
                x = x - a
            s.code("x = X0; st = nil")
            s.code("for k in range(%d) { x, st = optimize.momentum(g, x, st, lr=%r, beta=%r) }" % (STEPS, lr, beta))
            s.show("x", x)
            s.show("st[\"a\"]", a)

            # NesterovMomentumOptimizer: g at x - m a (once a exists)
            x, a = X0.copy(), None
            for _ in range(STEPS):
                gk = grad(x - beta * a) if a is not None else grad(x)
                a = beta * (a if a is not None else 0.0) + lr * gk
                x = x - a
            s.code("x = X0; st = nil")
            s.code("for k in range(%d) { x, st = optimize.nesterov(g, x, st, lr=%r, beta=%r) }" % (STEPS, lr, beta))
            s.show("x", x)

        # AdagradOptimizer: a = a + g**2; x = x - (lr / sqrt(a + eps)) g
        x, a = X0.copy(), 0.0
        for _ in range(STEPS):
            gk = grad(x)
            a = a + gk**2
            x = x - (lr / np.sqrt(a + 1e-8)) * gk
        s.code("x = X0; st = nil")
        s.code("for k in range(%d) { x, st = optimize.adagrad(g, x, st, lr=%r) }" % (STEPS, lr))
        s.show("x", x)

        # RMSPropOptimizer: a = d a + (1 - d) g**2; x = x - (lr / sqrt(a + eps)) g
        for decay in [0.9, 0.6]:
            x, a = X0.copy(), 0.0
            for _ in range(STEPS):
                gk = grad(x)
                a = decay * a + (1 - decay) * gk**2
                x = x - (lr / np.sqrt(a + 1e-8)) * gk
            s.code("x = X0; st = nil")
            s.code("for k in range(%d) { x, st = optimize.rmsprop(g, x, st, lr=%r, decay=%r) }" % (STEPS, lr, decay))
            s.show("x", x)

        # AdamOptimizer: the bias correction in the step size, eps outside
        for b1, b2 in [(0.9, 0.99), (0.8, 0.999)]:
            x, m, v = X0.copy(), 0, 0
            for t in range(1, STEPS + 1):
                gk = grad(x)
                step = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
                m = b1 * m + (1 - b1) * gk
                v = b2 * v + (1 - b2) * gk**2
                x = x - step * m / (np.sqrt(v) + 1e-8)
            s.code("x = X0; st = nil")
            s.code("for k in range(%d) { x, st = optimize.adam(g, x, st, lr=%r, beta1=%r, beta2=%r) }" % (STEPS, lr, b1, b2))
            s.show("x", x)
            s.show("st[\"t\"]", STEPS)

    # QNGOptimizer: x - lr * pinv(G + lam I) @ g, on a fixed metric (rank 3 of 4)
    G = np.array([[0.25, 0.05, 0.0, 0.0], [0.05, 0.2, 0.0, 0.0], [0.0, 0.0, 0.125, 0.0], [0.0, 0.0, 0.0, 0.0]])
    s.code("G = array(%s)" % G.tolist())
    for lam in [0, 0.01]:
        x = X0.copy()
        for _ in range(STEPS):
            mt = G + lam * np.identity(4)
            x = x - 0.01 * (np.linalg.pinv(mt) @ grad(x))
        s.code("x = X0")
        s.code("for k in range(%d) { x = optimize.qng(g, fn (p) { return G }, x, lr=0.01, lam=%r) }" % (STEPS, lam))
        s.show("x", x)
    s.write("optimize_pennylane")


main()
