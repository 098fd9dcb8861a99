-- nqueen (plb2): counts the solutions of the n-queens problem with an
-- iterative backtracking search over bit masks (the attacked columns and
-- diagonals of each row). Rows are 1-based; columns are bit positions 0..n-1.
local function solve(n)
    local count = 0
    local a, left, cols, right = {}, {}, {}, {}
    for k = 1, n do a[k] = -1; left[k] = 0; cols[k] = 0; right[k] = 0 end
    local full = (1 << n) - 1
    local k = 1
    while k >= 1 do
        local y = (left[k] | cols[k] | right[k]) & full
        if (y ~ full) >> (a[k] + 1) ~= 0 then
            local i = a[k] + 1
            while i < n and y & (1 << i) ~= 0 do
                i = i + 1
            end
            if k < n then
                local z = 1 << i
                a[k] = i
                k = k + 1
                left[k] = (left[k - 1] | z) << 1
                cols[k] = cols[k - 1] | z
                right[k] = (right[k - 1] | z) >> 1
            else
                count = count + 1
                k = k - 1
            end
        else
            a[k] = -1
            k = k - 1
        end
    end
    return count
end

local n = math.tointeger(tonumber(arg and arg[1])) or 8
print(solve(n))
