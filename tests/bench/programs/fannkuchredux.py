# fannkuch-redux (Benchmarks Game): for every permutation of 0..n-1, count
# the prefix reversals ("pancake flips") until 0 comes first; print the
# alternating-sign checksum and the maximum. Permutations are generated in
# the order of the Lua version (alternating swaps and rotations driven by
# a counter per position).
import sys


def fannkuch(n):
    perm = list(range(n))
    q = list(range(n))
    count = list(range(n))
    sign, maxflips, checksum = 1, 0, 0
    while True:
        first = perm[0]
        if first != 0:
            for i in range(1, n):
                q[i] = perm[i]
            flips = 1
            while True:
                nxt = q[first]
                if nxt == 0:
                    checksum += sign * flips
                    if flips > maxflips:
                        maxflips = flips
                    break
                q[first] = first
                if first >= 3:
                    i, j = 1, first - 1
                    while i < j:
                        q[i], q[j] = q[j], q[i]
                        i += 1
                        j -= 1
                first = nxt
                flips += 1
        if sign == 1:
            perm[0], perm[1] = perm[1], perm[0]
            sign = -1
        else:
            perm[1], perm[2] = perm[2], perm[1]
            sign = 1
            for i in range(2, n):
                if count[i] != 0:
                    count[i] -= 1
                    break
                if i == n - 1:
                    return checksum, maxflips
                count[i] = i
                t = perm[0]
                for j in range(i + 1):
                    perm[j] = perm[j + 1]
                perm[i + 1] = t


n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
checksum, maxflips = fannkuch(n)
print(checksum)
print("Pfannkuchen(%d) = %d" % (n, maxflips))
