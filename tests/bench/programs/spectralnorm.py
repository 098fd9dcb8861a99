# spectral-norm (Benchmarks Game): the largest singular value of the infinite
# matrix A(i, j) = 1 / ((i + j)(i + j + 1) / 2 + i + 1), by the power method
# on A^T A (ten rounds of u -> A^T A u).
import sys
from math import sqrt


def a(i, j):
    ij = i + j
    return 1.0 / (ij * (ij + 1) / 2 + i + 1)


def mul_av(n, v, out):
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += a(i, j) * v[j]
        out[i] = s


def mul_atv(n, v, out):
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += a(j, i) * v[j]
        out[i] = s


def mul_atav(n, v, out, tmp):
    mul_av(n, v, tmp)
    mul_atv(n, tmp, out)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
u = [1.0] * n
v = [0.0] * n
tmp = [0.0] * n
for _ in range(10):
    mul_atav(n, u, v, tmp)
    mul_atav(n, v, u, tmp)
vbv = vv = 0.0
for i in range(n):
    vbv += u[i] * v[i]
    vv += v[i] * v[i]
print("%.9f" % sqrt(vbv / vv))
