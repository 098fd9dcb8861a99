local s = 0
for i = 0, 1000000 - 1 do
    local d = {a = i, b = 2 * i, c = i + 1}
    s = s + d["a"] + d["b"] + d["c"]
end
print(s)
