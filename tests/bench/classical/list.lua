local n = 1000000
local a = {}
for i = 0, n - 1 do
    a[i + 1] = i
end
for p = 1, 10 do
    for i = 0, n - 1 do
        a[i + 1] = a[i + 1] * 0.5 + i
    end
end
local s = 0
for i = 0, n - 1 do
    s = s + a[i + 1]
end
print(string.format("%.6f", s))
