parts = []
for i in range(200000):
    parts.append(str(i))
print(len("".join(parts)))
