s = 0
for i in range(1000000):
    d = {"a": i, "b": 2 * i, "c": i + 1}
    s += d["a"] + d["b"] + d["c"]
print(s)
