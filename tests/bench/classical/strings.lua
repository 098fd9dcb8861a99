local parts = {}
for i = 0, 200000 - 1 do
    parts[#parts + 1] = tostring(i)
end
print(#table.concat(parts, ""))
