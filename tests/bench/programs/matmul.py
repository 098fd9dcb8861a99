# matmul (plb2): the product of two n x n matrices of floats held as lists
# of rows, with the i-k-j loop order; prints the middle element.
import sys


def matgen(n):
    tmp = 1.0 / n / n
    return [[tmp * (i - j) * (i + j) for j in range(n)] for i in range(n)]


def matmul(n, a, b):
    c = []
    for i in range(n):
        ci = [0.0] * n
        ai = a[i]
        for k in range(n):
            t = ai[k]
            bk = b[k]
            for j in range(n):
                ci[j] += t * bk[j]
        c.append(ci)
    return c


n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
a = matgen(n)
b = matgen(n)
c = matmul(n, a, b)
print("%.9f" % c[n // 2][n // 2])
