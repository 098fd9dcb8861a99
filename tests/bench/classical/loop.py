s = 0
for i in range(10000000):
    s += (i * i) % 7
print(s)
