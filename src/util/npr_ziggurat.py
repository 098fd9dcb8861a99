#!/usr/bin/env python3
"""Writes npr_ziggurat.h: the tables of the 256-step ziggurat that NumPy's
Generator.standard_normal uses, so that qh's draws equal NumPy's bit for bit.

The tables follow Marsaglia and Tsang's construction ("The Ziggurat Method
for Generating Random Variables", J. Stat. Softw. 5(8), 2000): the right
edges x[255] = r > x[254] > ... > x[1] > x[0] = 0 of 255 boxes of equal area
v under exp(-x^2/2), from x[i-1] = sqrt(-2 log(f(x[i]) + v / x[i])), with
r = 3.6541528853610088 and v = 0.0049286732339746519; then, at the scale
2^52 of a draw's 52 bits,

    wi[i] = x[i] / 2^52              (wi[0] = v / f(r) / 2^52)
    ki[i] = round(x[i-1] / x[i] * 2^52)   (ki[0] = round(r f(r) / v * 2^52))
    fi[i] = f(x[i])                  (f(x) = exp(-x^2/2), fi[0] = 1)

The recurrence loses accuracy towards x[0] (each step amplifies the last
one's rounding), so the edges below about x[30] depend on the libm that
computed them: the tables NumPy ships differ from this machine's by a few
units in the last place there. The script therefore calibrates each edge
against the installed NumPy (python3-numpy): a draw on the fast path
returns rabs * wi[idx] exactly, where idx and rabs are the low 8 and next
52 bits of the generator's raw 64-bit output, so a few draws per box pin
wi[idx] (and with it x[idx], a power-of-two multiple) to one double; the
script checks that exactly one double within 400 ulps fits every draw, then
verifies the finished tables against 200000 NumPy draws.

Usage: python3 npr_ziggurat.py > npr_ziggurat.h && clang-format -i npr_ziggurat.h
(needs python3-numpy; clang-format lays the tables out as the tree does)
"""
import math
import sys

import numpy as np

C = 256
R = 3.6541528853610087963519472518
V = 0.0049286732339746519
INV_R = 0.27366123732975828
SCALE = 2.0 ** 52


def f(x):
    return math.exp(-0.5 * x * x)


def edges():
    """x[0] = 0 < x[1] < ... < x[255] = R by the equal-area recurrence."""
    down = [R]
    for _ in range(C - 2):
        xi = down[-1]
        down.append(math.sqrt(-2.0 * math.log(f(xi) + V / xi)))
    return [0.0] + down[::-1]


def raw_fields(raw):
    idx = raw & 0xFF
    rabs = ((raw >> 8) >> 1) & 0x000FFFFFFFFFFFFF
    return idx, rabs


def calibrate(x, nseeds=30000):
    """Each edge as the double that NumPy's first draws reveal."""
    pairs = {i: [] for i in range(1, C)}
    for s in range(nseeds):
        raw = int(np.random.default_rng(s).bit_generator.random_raw())
        out = abs(float(np.random.default_rng(s).standard_normal()))
        idx, rabs = raw_fields(raw)
        if idx == 0 or rabs == 0:
            continue
        if abs(out / rabs / (x[idx] / SCALE) - 1.0) < 1e-11:
            pairs[idx].append((rabs, out))
    fixed = list(x)
    for i in range(1, C):
        ps = pairs[i][:40]
        if not ps:
            sys.exit("npr_ziggurat.py: no draw fell in box %d" % i)
        w0 = x[i] / SCALE
        fits = []
        lo = hi = w0
        cands = [w0]
        for _ in range(400):
            lo = math.nextafter(lo, -math.inf)
            hi = math.nextafter(hi, math.inf)
            cands += [lo, hi]
        for w in cands:
            if all(rabs * w == out for rabs, out in ps):
                fits.append(w)
        if len(fits) != 1:
            sys.exit("npr_ziggurat.py: box %d: %d candidate edges" % (i, len(fits)))
        fixed[i] = fits[0] * SCALE
    return fixed


def tables(x):
    wi = [xi / SCALE for xi in x]
    wi[0] = V / f(R) / SCALE
    xa = np.array(x)
    ki = [0] + [int(k) for k in np.round(xa[:-1] / xa[1:] * SCALE)]
    ki[0] = int(np.round(x[-1] * f(x[-1]) / V * SCALE))
    fi = [f(xi) for xi in x]
    return ki, wi, fi


class Pcg:
    """PCG64 fed with NumPy's own raw outputs (for the check)."""

    def __init__(self, seed):
        self.bg = np.random.default_rng(seed).bit_generator

    def next64(self):
        return int(self.bg.random_raw())

    def double(self):
        return (self.next64() >> 11) * (1.0 / 9007199254740992.0)


def normal(g, ki, wi, fi):
    while True:
        raw = g.next64()
        idx, rabs = raw_fields(raw)
        x = rabs * wi[idx]
        if (raw >> 8) & 1:
            x = -x
        if rabs < ki[idx]:
            return x
        if idx == 0:
            while True:
                xx = -INV_R * math.log1p(-g.double())
                yy = -math.log1p(-g.double())
                if yy + yy > xx * xx:
                    return -(R + xx) if (rabs >> 8) & 1 else R + xx
        elif (fi[idx - 1] - fi[idx]) * g.double() + fi[idx] < math.exp(-0.5 * x * x):
            return x


def verify(ki, wi, fi):
    for s in range(20):
        want = np.random.default_rng(s).standard_normal(10000)
        g = Pcg(s)
        for i, w in enumerate(want):
            got = normal(g, ki, wi, fi)
            if got != w:
                sys.exit("npr_ziggurat.py: seed %d draw %d: %r != NumPy's %r" % (s, i, got, w))


def main():
    ki, wi, fi = tables(calibrate(edges()))
    verify(ki, wi, fi)
    out = sys.stdout
    out.write("/* npr_ziggurat.h — the ziggurat tables of NumPy's standard_normal (made by\n"
              " * npr_ziggurat.py, which says how; do not edit). Read by npr.c only. */\n")
    out.write("#ifndef QH_NPR_ZIGGURAT_H\n#define QH_NPR_ZIGGURAT_H\n\n#include <stdint.h>\n\n")
    out.write("#define NPR_ZIG_R     %r\n#define NPR_ZIG_INV_R %r\n\n" % (3.6541528853610088, INV_R))
    out.write("static const uint64_t npr_zig_ki[256] = {\n")
    for i in range(0, C, 4):
        out.write("    " + ", ".join("0x%016xull" % k for k in ki[i:i + 4]) + ",\n")
    out.write("};\n\nstatic const double npr_zig_wi[256] = {\n")
    for i in range(0, C, 3):
        out.write("    " + ", ".join(float.hex(w) for w in wi[i:i + 3]) + ",\n")
    out.write("};\n\nstatic const double npr_zig_fi[256] = {\n")
    for i in range(0, C, 3):
        out.write("    " + ", ".join(float.hex(v) for v in fi[i:i + 3]) + ",\n")
    out.write("};\n\n#endif\n")


if __name__ == "__main__":
    main()
