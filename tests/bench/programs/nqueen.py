# nqueen (plb2): counts the solutions of the n-queens problem with an
# iterative backtracking search over bit masks (the attacked columns and
# diagonals of each row).
import sys


def solve(n):
    count = 0
    a = [-1] * n        # the column tried last on each row
    left = [0] * n      # attacked squares, per row: left diagonals,
    cols = [0] * n      # columns
    right = [0] * n     # and right diagonals
    full = (1 << n) - 1
    k = 0
    while k >= 0:
        y = (left[k] | cols[k] | right[k]) & full
        if (y ^ full) >> (a[k] + 1):
            i = a[k] + 1
            while i < n and y & (1 << i):
                i += 1
            if k < n - 1:
                z = 1 << i
                a[k] = i
                k += 1
                left[k] = (left[k - 1] | z) << 1
                cols[k] = cols[k - 1] | z
                right[k] = (right[k - 1] | z) >> 1
            else:
                count += 1
                k -= 1
        else:
            a[k] = -1
            k -= 1
    return count


n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
print(solve(n))
