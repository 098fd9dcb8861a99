"""Python values printed as qh prints them (lang/values.md, "Printing"):
shared by the scripts that make this folder's expected outputs from NumPy."""
import math

import numpy as np


def num(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e15:
        return "%d" % int(x)
    return repr(x)


def cnum(z):
    z = complex(z)
    if z.imag == 0 and not math.copysign(1, z.imag) < 0 and z.real == 0 and math.copysign(1, z.real) > 0:
        return "0j"
    return repr(z)


def q(v):
    """qh's text for a number, complex, bool, list or NumPy array."""
    if isinstance(v, np.ndarray):
        if v.dtype == bool:  # qh's comparisons give 0s and 1s
            v = v.astype(float)
        if v.ndim == 0:
            return q(v.item())
        return "array(" + q(v.tolist()) + ")"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(q(e) for e in v) + "]"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (complex, np.complexfloating)):
        return cnum(v)
    if isinstance(v, str):
        return v
    return num(v)


class Script:
    """A qh script and its expected output, built line by line."""

    def __init__(self, header):
        self.src = ["# " + h for h in header.strip().split("\n")]
        self.out = []

    def code(self, line):
        self.src.append(line)

    def show(self, expr, value):
        self.src.append("print(%s)" % expr)
        self.out.append(q(value))

    def write(self, name):
        with open(name + ".qh", "w") as f:
            f.write("\n".join(self.src) + "\n")
        with open(name + ".out", "w") as f:
            f.write("\n".join(self.out) + "\n")
