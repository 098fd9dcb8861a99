-- matmul (plb2): the product of two n x n matrices of floats held as tables
-- of rows, with the i-k-j loop order; prints the middle element. Tables are
-- 1-based; the values are those of the 0-based formula.
local function matgen(n)
    local tmp = 1.0 / n / n
    local a = {}
    for i = 1, n do
        local row = {}
        for j = 1, n do
            row[j] = tmp * (i - j) * (i + j - 2)
        end
        a[i] = row
    end
    return a
end

local function matmul(n, a, b)
    local c = {}
    for i = 1, n do
        local ci = {}
        for j = 1, n do ci[j] = 0.0 end
        local ai = a[i]
        for k = 1, n do
            local t = ai[k]
            local bk = b[k]
            for j = 1, n do
                ci[j] = ci[j] + t * bk[j]
            end
        end
        c[i] = ci
    end
    return c
end

local n = math.tointeger(tonumber(arg and arg[1])) or 100
local a = matgen(n)
local b = matgen(n)
local c = matmul(n, a, b)
print(string.format("%.9f", c[n // 2 + 1][n // 2 + 1]))
