n = 1000000
a = []
for i in range(n):
    a.append(i)
for p in range(10):
    for i in range(n):
        a[i] = a[i] * 0.5 + i
s = 0
for i in range(n):
    s += a[i]
print("%.6f" % s)
