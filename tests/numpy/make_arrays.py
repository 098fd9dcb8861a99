#!/usr/bin/env python3
"""Makes arrays_linalg.qh/.out and arrays_funcs.qh/.out: numpy.linalg and
NumPy's array functions on fixed matrices (python3-numpy's output, and
scipy.linalg's for expm and block_diag), and the qh statements that must
print the same. numpy.linalg and qh call the same LAPACK routines on the
same column-major copies, so most results are compared exactly; expm (a
different algorithm from scipy's) and a few others by allclose. Run from
this folder: /usr/bin/python3 make_arrays.py (Debian's python3-numpy and
python3-scipy)."""
import os

# OpenBLAS's results depend on its thread count (eigh and eig split their
# blocked reductions differently) and on the kernels it picks for the CPU
# (an AVX-512 machine's SkylakeX kernels round inv, solve, det and lstsq
# differently from the Haswell ones): NumPy here and qh in the test
# (tests/numpy/run.sh) both run with one thread and, unless the environment
# says otherwise, the Haswell kernels, so the stored outputs hold on any
# machine that can run them (AVX2 and FMA); run.sh also makes them again on
# the machine where NumPy is.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
if not os.environ.get("OPENBLAS_CORETYPE"):
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        flags = []
    if "avx2" in flags and "fma" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"

import numpy as np  # noqa: E402 (after the environment it reads)
import scipy.linalg  # noqa: E402

from qhfmt import Script, q

rs = np.random.RandomState(2024)


def lit(a):
    """a qh literal for a NumPy array"""
    return "array(%s)" % q(np.asarray(a).tolist())


def mats():
    out = []
    for n in (1, 2, 3, 5):
        out.append(rs.randn(n, n))
    out.append(np.array([[4.0, 1.0], [2.0, 3.0]]))
    out.append(rs.randn(3, 3) + 1j * rs.randn(3, 3))
    return out


def linalg():
    s = Script("""
numpy.linalg against python3-numpy (made by make_arrays.py; do not edit).""")
    for k, a in enumerate(mats()):
        s.code("a = %s" % lit(a))
        s.show("inv(a)", np.linalg.inv(a))
        s.show("det(a)", np.linalg.det(a))
        b = rs.randn(a.shape[0])
        s.code("b = %s" % lit(b))
        s.show("solve(a, b)", np.linalg.solve(a, b))
        B = rs.randn(a.shape[0], 2)
        s.code("B = %s" % lit(B))
        s.show("solve(a, B)", np.linalg.solve(a, B))
        h = a + a.conj().T
        s.code("h = a + conj(transpose(a))")
        w, v = np.linalg.eigh(h)
        s.show("eigh(h)", [w, v])
        s.show("eigvalsh(h)", np.linalg.eigvalsh(h))
        w, v = np.linalg.eig(a)
        s.show("eig(a)", [w, v])
        u, sv, vh = np.linalg.svd(a)
        s.show("svd(a)", [u, sv, vh])
        s.show("svd(a, compute_uv=false)", np.linalg.svd(a, compute_uv=False))
        s.show("pinv(a)", np.linalg.pinv(a))
        qq, rr = np.linalg.qr(a)
        s.show("qr(a)", [qq, rr])
        s.show("allclose(expm(a), %s, rtol=1e-12, atol=1e-14)" % lit(scipy.linalg.expm(a)), True)
        s.show("trace(a)", np.trace(a))
    # rectangular matrices
    for shape in ((3, 2), (2, 4)):
        a = rs.randn(*shape)
        s.code("a = %s" % lit(a))
        u, sv, vh = np.linalg.svd(a)
        s.show("svd(a)", [u, sv, vh])
        u, sv, vh = np.linalg.svd(a, full_matrices=False)
        s.show("svd(a, full_matrices=false)", [u, sv, vh])
        s.show("pinv(a)", np.linalg.pinv(a))
        qq, rr = np.linalg.qr(a)
        s.show("qr(a)", [qq, rr])
        qq, rr = np.linalg.qr(a, mode="complete")
        s.show("qr(a, mode=\"complete\")", [qq, rr])
        s.show("qr(a, mode=\"r\")", np.linalg.qr(a, mode="r"))
    # stacks
    st = rs.randn(2, 3, 3)
    s.code("st = %s" % lit(st))
    s.show("det(st)", np.linalg.det(st))
    s.show("inv(st)", np.linalg.inv(st))
    bs = rs.randn(2, 3, 1)
    s.code("bs = %s" % lit(bs))
    s.show("solve(st, bs)", np.linalg.solve(st, bs))
    # errors as NumPy raises them
    s.code("for f in [fn () { return inv(array([[1, 2], [2, 4]])) }, fn () { return solve(array([[1, 2], [2, 4]]), [1, 2]) },")
    s.code("          fn () { return inv(array([[1, 2, 3]])) }, fn () { return det(array([1, 2])) },")
    s.code("          fn () { return eigh(array([[1, nan], [0, 1]])) }, fn () { return solve(eye(2), [1, 2, 3]) }] {")
    s.code("    try { print(f()) } catch e { print(e) }")
    s.code("}")
    s.out += ["inv: singular matrix", "solve: singular matrix",
              "inv: expected a square matrix, got shape (1, 3)", "det: expected a square matrix, got shape (2,)",
              "eigh: array must not contain infs or NaNs", "solve: shapes (2, 2) and (3,) do not match"]
    s.write("arrays_linalg")


def funcs():
    s = Script("""
NumPy's array functions against python3-numpy (made by make_arrays.py;
do not edit).""")
    x = np.round(rs.randn(4, 5) * 3, 1)
    x[1, 2] = x[0, 0]  # a tie
    s.code("x = %s" % lit(x))
    for ax in (None, 0, 1, -1):
        axs = "nil" if ax is None else str(ax)
        s.show("argmax(x, axis=%s)" % axs, np.argmax(x, axis=ax))
        s.show("argmin(x, axis=%s)" % axs, np.argmin(x, axis=ax))
        s.show("cumsum(x, axis=%s)" % axs, np.cumsum(x, axis=ax))
        s.show("var(x, axis=%s)" % axs, np.var(x, axis=ax))
        s.show("std(x, axis=%s, ddof=1)" % axs, np.std(x, axis=ax, ddof=1))
        s.show("var(x, axis=%s, keepdims=true)" % axs, np.var(x, axis=ax, keepdims=True))
    for ax in (0, 1, -1):
        s.show("argsort(x, axis=%d, kind=\"stable\")" % ax, np.argsort(x, axis=ax, kind="stable"))
        s.show("sort(x, axis=%d)" % ax, np.sort(x, axis=ax))
    s.show("argsort(x, axis=nil)", np.argsort(x, axis=None, kind="stable"))
    z = rs.randn(300)
    s.code("z = %s" % lit(z))
    s.show("[var(z), std(z), mean(z), sum(z)]", [np.var(z), np.std(z), np.mean(z), np.sum(z)])
    # sum and mean: NumPy's pairwise blocks and its 8192-element buffer
    s.code("for n in [5, 8, 9, 100, 128, 129, 1000, 8192, 8193, 20000] {")
    s.code("    y = random_state(n).randn(n)")
    s.code("    print(sum(y), sum(y + 1j * y[::-1]), mean(y), sum(reshape(y[0:n - n % 4], -1, 4), axis=1)[0])")
    s.code("}")
    for n in [5, 8, 9, 100, 128, 129, 1000, 8192, 8193, 20000]:
        y = np.random.RandomState(n).randn(n)
        s.out.append(" ".join(q(v) for v in [y.sum(), (y + 1j * y[::-1]).sum(), y.mean(), y[:n - n % 4].reshape(-1, 4).sum(axis=1)[0]]))
    c = rs.randn(6) + 1j * rs.randn(6)
    s.code("c = %s" % lit(c))
    s.show("[var(c), std(c)]", [np.var(c), np.std(c)])
    s.show("cumsum(c)", np.cumsum(c))
    s.show("argsort(array([3, 1, 2, 1, 3]))", np.argsort(np.array([3, 1, 2, 1, 3]), kind="stable"))
    s.show("argmax(array([1, nan, 3]))", np.argmax(np.array([1, np.nan, 3])))
    s.show("sort(array([3, nan, 1]))", np.sort(np.array([3, np.nan, 1])))
    s.show("sign(array([-2.5, 0, 3, -0.0]))", np.sign(np.array([-2.5, 0, 3, -0.0])))
    s.show("trace(%s)" % lit(np.arange(12.0).reshape(3, 4)), np.trace(np.arange(12.0).reshape(3, 4)))
    s.show("trace(%s, offset=1)" % lit(np.arange(12.0).reshape(3, 4)), np.trace(np.arange(12.0).reshape(3, 4), offset=1))
    s.show("trace(%s)" % lit(np.arange(8.0).reshape(2, 2, 2)), np.trace(np.arange(8.0).reshape(2, 2, 2)))
    m = np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 2):
        s.show("diag(%s, k=%d)" % (lit(m), k), np.diag(m, k=k))
        s.show("diag([1, 2, 3], %d)" % k, np.diag([1.0, 2, 3], k))
    s.show("outer([1, 2, 3], %s)" % lit(m[:2, :2]), np.outer([1, 2, 3], m[:2, :2]))
    s.show("where(x > 0, x, 0)", np.where(x > 0, x, 0))
    s.show("where([[1], [0]], [1, 2, 3], [[10], [20]])", np.where([[1], [0]], [1, 2, 3], [[10], [20]]))
    s.show("where(x > 1)", list(np.where(x > 1)))
    s.show("clip(x, -1, 2)", np.clip(x, -1, 2))
    s.show("clip(x, [0, -1, -2, -3, -4], 1)", np.clip(x, [0, -1, -2, -3, -4], 1))
    s.show("clip(x, nil, 0.5)", np.clip(x, None, 0.5))
    s.show("clip(array([1, nan, -1]), 0, 2)", np.clip(np.array([1, np.nan, -1]), 0, 2))
    u = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5.0])
    s.code("u = %s" % lit(u))
    r = np.unique(u, return_index=True, return_inverse=True, return_counts=True)
    s.show("unique(u)", np.unique(u))
    s.show("unique(u, return_index=true, return_inverse=true, return_counts=true)", list(r))
    s.show("unique(u, return_counts=true)", list(np.unique(u, return_counts=True)))
    s.show("bincount([0, 1, 1, 3, 2, 1, 7])", np.bincount([0, 1, 1, 3, 2, 1, 7]))
    s.show("bincount([0, 1, 1, 3], weights=[0.3, 0.5, 0.2, 1], minlength=6)", np.bincount([0, 1, 1, 3], weights=[0.3, 0.5, 0.2, 1], minlength=6))
    a1, a2 = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12).reshape(2, 3)
    s.code("p = %s" % lit(a1))
    s.code("r = %s" % lit(a2))
    for ax in (0, 1, -1):
        s.show("concatenate([p, r], axis=%d)" % ax, np.concatenate([a1, a2], axis=ax))
    s.show("concatenate([p, r], axis=nil)", np.concatenate([a1, a2], axis=None))
    for ax in (0, 1, 2, -1):
        s.show("stack([p, r], axis=%d)" % ax, np.stack([a1, a2], axis=ax))
    s.show("stack([[1, 2], [3, 4], [5, 6]])", np.stack([[1, 2], [3, 4], [5, 6]]))
    s.show("isclose([1, 1.00001, inf, nan, 0], [1.000001, 1, inf, nan, 1e-9])", np.isclose([1, 1.00001, np.inf, np.nan, 0], [1.000001, 1, np.inf, np.nan, 1e-9]))
    s.show("isclose([1, nan], [1, nan], equal_nan=true)", np.isclose([1, np.nan], [1, np.nan], equal_nan=True))
    s.show("[allclose(x, x + 1e-9), allclose(x, x + 1e-3), allclose([1, 2], [1.1, 2.2], rtol=0.1)]",
           [np.allclose(x, x + 1e-9), np.allclose(x, x + 1e-3), np.allclose([1, 2], [1.1, 2.2], rtol=0.1)])
    px = np.linspace(0, 2, 9)
    py = np.round(np.sin(3 * px) + 0.1 * rs.randn(9), 3)
    s.code("px = linspace(0, 2, 9)")
    s.code("py = %s" % lit(py))
    for deg in (0, 1, 2, 3, 5):
        s.show("polyfit(px, py, %d)" % deg, np.polyfit(px, py, deg))
    s.show("block_diag(%s, 5, [6, 7])" % lit(m[:2, :2]), scipy.linalg.block_diag(m[:2, :2], 5, [6, 7]))
    s.show("block_diag(array([[1j]]), eye(2))", scipy.linalg.block_diag(np.array([[1j]]), np.eye(2)))
    s.write("arrays_funcs")


def indexing():
    s = Script("""
Boolean masks and integer-array indexing, read and write, against
python3-numpy (made by make_arrays.py; do not edit).""")
    a = np.arange(24.0).reshape(2, 3, 4)
    s.code("a = reshape(arange(24), 2, 3, 4)")
    reads = [
        ("a[a > 17]", a[a > 17]),
        ("a[[1, 0]]", a[[1, 0]]),
        ("a[0, [2, 0]]", a[0, [2, 0]]),
        ("a[:, [0, 2], 1]", a[:, [0, 2], 1]),
        ("a[[0, 1], [1, 2]]", a[[0, 1], [1, 2]]),
        ("a[[0, 1], :, [1, 2]]", a[[0, 1], :, [1, 2]]),
        ("a[0, :, [3, 0, 3]]", a[0, :, [3, 0, 3]]),
        ("a[[[0], [1]], [0, 2]]", a[[[0], [1]], [0, 2]]),
        ("a[[true, false]]", a[[True, False]]),
        ("a[a[:, :, 0] > 4]", a[a[:, :, 0] > 4]),
        ("a[1][a[1] >= 15]", a[1][a[1] >= 15]),
        ("a[:, 1][[1, 0], [-1, 0]]", a[:, 1][[1, 0], [-1, 0]]),
        ("a[array([1, 1, 0]), 2]", a[np.array([1, 1, 0]), 2]),
        ("a[1, array([true, false, true])]", a[1, np.array([True, False, True])]),
    ]
    for e, v in reads:
        s.show(e, v)
    writes = [
        ("b[b > 10] = 0", lambda b: b.__setitem__(b > 10, 0)),
        ("b[[0, 2]] = -1", lambda b: b.__setitem__([0, 2], -1)),
        ("b[[1, 3], [0, 2]] = array([7, 8])", lambda b: b.__setitem__(([1, 3], [0, 2]), np.array([7, 8]))),
        ("b[:, [0, 1]] = array([[1, 2]])", lambda b: b.__setitem__((slice(None), [0, 1]), np.array([[1, 2]]))),
        ("b[b == 1] = b[b == 2] * 10", lambda b: b.__setitem__(b == 1, b[b == 2] * 10)),
        ("b[[0, 0, 1]] = array([[1, 1, 1], [2, 2, 2], [3, 3, 3]])", lambda b: b.__setitem__([0, 0, 1], np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3]]))),
    ]
    b = np.arange(12.0).reshape(4, 3)
    s.code("b = reshape(arange(12), 4, 3)")
    for e, f in writes:
        f(b)
        s.code(e)
        s.show("b", b)
    s.write("arrays_indexing")


linalg()
funcs()
indexing()
