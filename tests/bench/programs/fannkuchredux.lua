-- fannkuch-redux (Benchmarks Game): for every permutation of 0..n-1, count
-- the prefix reversals ("pancake flips") until 0 comes first; print the
-- alternating-sign checksum and the maximum. Tables are 1-based and hold
-- the values 0..n-1.
local function fannkuch(n)
    local perm, q, count = {}, {}, {}
    for i = 1, n do perm[i] = i - 1; q[i] = i - 1; count[i] = i - 1 end
    local sign, maxflips, checksum = 1, 0, 0
    while true do
        local first = perm[1]
        if first ~= 0 then
            for i = 2, n do
                q[i] = perm[i]
            end
            local flips = 1
            while true do
                local nxt = q[first + 1]
                if nxt == 0 then
                    checksum = checksum + sign * flips
                    if flips > maxflips then
                        maxflips = flips
                    end
                    break
                end
                q[first + 1] = first
                if first >= 3 then
                    local i, j = 2, first
                    while i < j do
                        q[i], q[j] = q[j], q[i]
                        i = i + 1
                        j = j - 1
                    end
                end
                first = nxt
                flips = flips + 1
            end
        end
        if sign == 1 then
            perm[1], perm[2] = perm[2], perm[1]
            sign = -1
        else
            perm[2], perm[3] = perm[3], perm[2]
            sign = 1
            for i = 3, n do
                if count[i] ~= 0 then
                    count[i] = count[i] - 1
                    break
                end
                if i == n then
                    return checksum, maxflips
                end
                count[i] = i - 1
                local t = perm[1]
                for j = 1, i do
                    perm[j] = perm[j + 1]
                end
                perm[i + 1] = t
            end
        end
    end
end

local n = tonumber(arg and arg[1]) or 7
local checksum, maxflips = fannkuch(n)
print(checksum)
print(string.format("Pfannkuchen(%d) = %d", n, maxflips))
