#!/usr/bin/env python3
"""Makes random_legacy.qh/.out and random_generator.qh/.out: NumPy's random
streams (python3-numpy) for many seeds, sizes and shapes, and the qh
statements that must print the same numbers. Run from this folder:
python3 make_random.py (the outputs are stored; meson test compares)."""
import numpy as np

from qhfmt import Script

LEGACY_SEEDS = [0, 1, 42, 12345, 2**32 - 1, [1, 2, 3], [7, 2**31 + 5]]
GEN_SEEDS = [0, 1, 7, 42, 2**40 + 5, 2**53, [1, 2, 3], [9, 0]]
P5 = [0.1, 0.2, 0.3, 0.15, 0.25]


def sums(s, z):
    t = u = w = 0.0
    for i, x in enumerate(z.tolist()):
        t += x
        u += x * x
        w += i * x
    s.code("t = 0; u = 0; w = 0; i = 0")
    s.code("for x in z { t += x; u += x * x; w += i * x; i += 1 }")
    s.show("[t, u, w]", [t, u, w])


def seed_text(s):
    return str(s)


def legacy():
    s = Script("""
NumPy's legacy numpy.random (RandomState, MT19937) reproduced bit for bit:
made by make_random.py from python3-numpy's output; do not edit.""")
    s.code("import np")
    for seed in LEGACY_SEEDS:
        rs = np.random.RandomState(seed)
        s.code("rs = random_state(%s)" % seed_text(seed))
        s.show("rs.rand(5)", rs.rand(5))
        s.show("rs.randn(3, 2)", rs.randn(3, 2))
        s.show("rs.randn(3)", rs.randn(3))  # the cached second value spans calls
        s.show("rs.random([2, 2])", rs.random((2, 2)))
        s.show("rs.random_sample()", rs.random_sample())
        s.show("rs.uniform(-1, 3, 4)", rs.uniform(-1, 3, 4))
        s.show("rs.uniform()", rs.uniform())
        s.show("rs.normal(2, 0.5, [3])", rs.normal(2, 0.5, (3,)))
        s.show("rs.normal([0, 10, 20], 1)", rs.normal([0, 10, 20], 1))
        s.show("rs.uniform(low=[[0], [1]], high=[2, 3, 4])", rs.uniform(low=[[0], [1]], high=[2, 3, 4]))
        s.show("rs.normal(0, [1, 2], size=[3, 2])", rs.normal(0, [1, 2], size=(3, 2)))
        s.show("rs.standard_normal(5)", rs.standard_normal(5))
        s.show("rs.randint(0, 10, 8)", rs.randint(0, 10, 8))
        s.show("rs.randint(-5, 5)", rs.randint(-5, 5))
        s.show("rs.randint(7, size=[2, 3])", rs.randint(7, size=(2, 3)))
        s.show("rs.randint(0, 2**40, 3)", rs.randint(0, 2**40, 3))
        s.show("rs.randint(0, 2**32, 3)", rs.randint(0, 2**32, 3))
        s.show("rs.choice(7, 5)", rs.choice(7, 5))
        s.show("rs.choice(7, 4, replace=false)", rs.choice(7, 4, replace=False))
        s.show("rs.choice([1.5, 2.5, 3.5], [2, 2], p=[0.2, 0.3, 0.5])",
               rs.choice([1.5, 2.5, 3.5], (2, 2), p=[0.2, 0.3, 0.5]))
        s.show("rs.choice(5, 3, replace=false, p=%s)" % P5, rs.choice(5, 3, replace=False, p=P5))
        s.show("rs.choice(5, p=%s)" % P5, rs.choice(5, p=P5))
        s.show("rs.choice(5)", rs.choice(5))
        lst = list(range(10))
        rs.shuffle(lst)
        s.code("l = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]")
        s.code("rs.shuffle(l)")
        s.show("l", lst)
        a = np.arange(12.0).reshape(4, 3)
        rs.shuffle(a)
        s.code("a = reshape(arange(12), 4, 3)")
        s.code("rs.shuffle(a)")
        s.show("a", a)
        s.show("rs.permutation(8)", rs.permutation(8))
        s.show("rs.permutation(array([0.5, 1.5, 2.5, 3.5]))", rs.permutation(np.array([0.5, 1.5, 2.5, 3.5])))
        s.show("rs.rand()", rs.rand())
    # the module's global generator, as a NumPy user writes it
    np.random.seed(42)
    s.code("np.random.seed(42)")
    s.show("np.random.uniform(0, 2 * pi, [2, 3])", np.random.uniform(0, 2 * np.pi, (2, 3)))
    s.show("np.random.randn(4)", np.random.randn(4))
    np.random.seed(0)
    s.code("np.random.seed(0)")
    s.show("np.random.random(3)", np.random.random(3))
    s.show("np.random.RandomState(3).rand(2)", np.random.RandomState(3).rand(2))
    # many draws: sequential sums of the values, their squares and their
    # index-weighted values (one differing bit anywhere shows in them)
    big = np.random.RandomState(5).randn(200000)
    s.code("z = random_state(5).randn(200000)")
    sums(s, big)
    s.write("random_legacy")


def generator():
    s = Script("""
NumPy's Generator (default_rng: SeedSequence -> PCG64) reproduced bit for
bit: made by make_random.py from python3-numpy's output; do not edit.""")
    s.code("import np")
    for seed in GEN_SEEDS:
        g = np.random.default_rng(seed)
        s.code("g = default_rng(%s)" % seed_text(seed))
        s.show("g.random(5)", g.random(5))
        s.show("g.random()", g.random())
        s.show("g.normal(size=[2, 3])", g.normal(size=(2, 3)))
        s.show("g.standard_normal(4)", g.standard_normal(4))
        s.show("g.normal(1, 2)", g.normal(1, 2))
        s.show("g.uniform(0, 2 * pi, [2, 3])", g.uniform(0, 2 * np.pi, (2, 3)))
        s.show("g.uniform(low=[0, 5], high=10)", g.uniform(low=[0, 5], high=10))
        s.show("g.integers(0, 10, 8)", g.integers(0, 10, 8))
        s.show("g.random(2)", g.random(2))  # the kept 32-bit half survives
        s.show("g.integers(5, size=3)", g.integers(5, size=3))
        s.show("g.integers(1, 6, 5, endpoint=true)", g.integers(1, 6, 5, endpoint=True))
        s.show("g.integers(-3, 2**40, 3)", g.integers(-3, 2**40, 3))
        s.show("g.integers(0, 2**32, 2)", g.integers(0, 2**32, 2))
        s.show("g.integers(0, 2**32 + 1, 2)", g.integers(0, 2**32 + 1, 2))
        s.show("g.choice(10, 3, replace=false)", g.choice(10, 3, replace=False))
        s.show("g.choice(10, 4, replace=false, shuffle=false)", g.choice(10, 4, replace=False, shuffle=False))
        s.show("g.choice(7, [2, 3])", g.choice(7, (2, 3)))
        s.show("g.choice([2.5, 3.5, 4.5], 4, p=[0.5, 0.25, 0.25])", g.choice([2.5, 3.5, 4.5], 4, p=[0.5, 0.25, 0.25]))
        s.show("g.choice(5, 3, replace=false, p=%s)" % P5, g.choice(5, 3, replace=False, p=P5))
        c = g.choice(20000, 500, replace=False)  # NumPy's tail shuffle
        s.code("c = g.choice(20000, 500, replace=false)")
        s.show("c[0:8]", c[0:8])
        s.show("sum(c)", int(c.sum()))
        c = g.choice(50000, 300, replace=False)  # Floyd's algorithm
        s.code("c = g.choice(50000, 300, replace=false)")
        s.show("c[0:8]", c[0:8])
        s.show("sum(c)", int(c.sum()))
        lst = list(range(10))
        g.shuffle(lst)
        s.code("l = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]")
        s.code("g.shuffle(l)")
        s.show("l", lst)
        a = np.arange(12.0).reshape(4, 3)
        g.shuffle(a)
        s.code("a = reshape(arange(12), 4, 3)")
        s.code("g.shuffle(a)")
        s.show("a", a)
        s.show("g.permutation(10)", g.permutation(10))
        s.show("g.permutation([1, 2, 3, 4])", g.permutation([1, 2, 3, 4]))
    s.code("rng = np.random.default_rng(7)")
    rng = np.random.default_rng(7)
    s.show("rng.normal(0, 1, [3, 2])", rng.normal(0, 1, (3, 2)))
    big = np.random.default_rng(3).standard_normal(200000)
    s.code("z = default_rng(3).standard_normal(200000)")
    sums(s, big)
    s.write("random_generator")


def lookahead():
    s = Script("""
Draws from np.random in the arguments of quantum calls made in a loop (the
loop that lookahead starts early): the calls get NumPy's stream in program
order in every mode. Made by make_random.py; do not edit.""")
    s.code("import np")
    s.code("qfn c(x) on device(\"statevector\", wires=1) { RX(x, 0); return expval(PauliZ(0)) }")
    s.code("np.random.seed(11)")
    s.code("rng = default_rng(11)")
    s.code("for k in range(6) {")
    s.code("    print(fmt(\"%.12f %.12f\", c(np.random.uniform(0, pi)), c(rng.normal())))")
    s.code("}")
    rs = np.random.RandomState(11)
    g = np.random.default_rng(11)
    for k in range(6):
        s.out.append("%.12f %.12f" % (np.cos(rs.uniform(0, np.pi)), np.cos(g.normal())))
    s.write("random_in_loops")


legacy()
generator()
lookahead()
