# bedcov (plb2): n random intervals in an implicit interval tree (a sorted
# array whose element i also holds the largest end in its subtree); for n
# other random intervals, the overlapping ones are found and the length
# they cover is summed. Random numbers: splitmix32, with 32-bit products
# split into 16-bit halves so that every value stays exact in a double.
import sys


def mul32(a, b):
    ah, al = a >> 16, a & 0xffff
    bh, bl = b >> 16, b & 0xffff
    high = (ah * bl + al * bh) & 0xffff
    return ((high << 16) + al * bl) & 0xffffffff


def splitmix32(seed):
    state = seed

    def next():
        nonlocal state
        state = (state + 0x9e3779b9) & 0xffffffff
        t = state ^ (state >> 16)
        t = mul32(t, 0x21f0aaad)
        t = t ^ (t >> 15)
        t = mul32(t, 0x735a2d97)
        return t ^ (t >> 15)
    return next


def gen_intervals(n, rng, bits_start, bits_len):
    mask_start = (1 << bits_start) - 1
    mask_len = (1 << bits_len) - 1
    a = []
    for _ in range(n):
        st = rng() & mask_start
        a.append([st, st + (rng() & mask_len), 0])
    return a


def index(a):
    n = len(a)
    last, last_i = 0, 0
    for i in range(0, n, 2):
        a[i][2] = a[i][1]
        last, last_i = a[i][2], i
    k = 1
    while 1 << k < n:
        x = 1 << (k - 1)
        for i in range((1 << k) - 1, n, 1 << (k + 1)):
            left = a[i - x][2]
            right = a[i + x][2] if i + x < n else last
            end = a[i][1]
            if left > end:
                end = left
            if right > end:
                end = right
            a[i][2] = end
        last_i = last_i - x if (last_i >> k) & 1 else last_i + x
        if last_i < n and a[last_i][2] > last:
            last = a[last_i][2]
        k += 1
    return k - 1


def overlap(a, max_level, st, en):
    n = len(a)
    stack = [(max_level, (1 << max_level) - 1, 0)]
    found = []
    while stack:
        k, x, w = stack.pop()
        if k <= 3:
            i = x >> k << k
            i1 = i + (1 << (k + 1)) - 1
            if i1 > n:
                i1 = n
            while i < i1 and a[i][0] < en:
                if st < a[i][1]:
                    found.append(a[i])
                i += 1
        elif w == 0:
            stack.append((k, x, 1))
            y = x - (1 << (k - 1))
            if y >= n or a[y][2] > st:
                stack.append((k - 1, y, 0))
        elif x < n and a[x][0] < en:
            if st < a[x][1]:
                found.append(a[x])
            stack.append((k - 1, x + (1 << (k - 1)), 0))
    return found


n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
rng = splitmix32(11)
a1 = sorted(gen_intervals(n, rng, 28, 14), key=lambda t: t[0])
a2 = gen_intervals(n, rng, 28, 14)
max_level = index(a1)
total = 0
for st1, en1, _ in a2:
    cov, cov_st, cov_en = 0, 0, 0
    for item in overlap(a1, max_level, st1, en1):
        st0 = item[0] if item[0] > st1 else st1
        en0 = item[1] if item[1] < en1 else en1
        if st0 > cov_en:
            cov += cov_en - cov_st
            cov_st, cov_en = st0, en0
        elif en0 > cov_en:
            cov_en = en0
    cov += cov_en - cov_st
    total += cov
print(total)
