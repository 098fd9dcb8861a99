# mandelbrot (Benchmarks Game): the n x n bitmap of the Mandelbrot set over
# [-1.5, 0.5] x [-1, 1], 50 iterations, 8 pixels packed per byte (the P4
# rows). Instead of writing the binary bitmap, prints a checksum of its
# bytes (h = (33 h + byte) mod 2^32), which the other ports must match.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
h = 0
for y in range(n):
    ci = 2.0 * y / n - 1.0
    bits = 0
    nbits = 0
    for x in range(n):
        cr = 2.0 * x / n - 1.5
        zr = zi = tr = ti = 0.0
        escaped = False
        for _ in range(50):
            zi = 2.0 * zr * zi + ci
            zr = tr - ti + cr
            tr = zr * zr
            ti = zi * zi
            if tr + ti > 4.0:
                escaped = True
                break
        bits <<= 1
        if not escaped:
            bits |= 1
        nbits += 1
        if nbits == 8:
            h = (h * 33 + bits) & 0xffffffff
            bits = 0
            nbits = 0
    if nbits > 0:
        h = (h * 33 + (bits << (8 - nbits))) & 0xffffffff
print("P4 %d %d checksum %d" % (n, n, h))
