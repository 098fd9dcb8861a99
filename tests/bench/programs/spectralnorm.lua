-- spectral-norm (Benchmarks Game): the largest singular value of the infinite
-- matrix A(i, j) = 1 / ((i + j)(i + j + 1) / 2 + i + 1) (0-based i, j), by the
-- power method on A^T A (ten rounds of u -> A^T A u). Lua tables are 1-based.
local function a(i, j)
    local ij = i + j - 2
    return 1.0 / (ij * (ij + 1) / 2 + i)
end

local function mul_av(n, v, out)
    for i = 1, n do
        local s = 0.0
        for j = 1, n do
            s = s + a(i, j) * v[j]
        end
        out[i] = s
    end
end

local function mul_atv(n, v, out)
    for i = 1, n do
        local s = 0.0
        for j = 1, n do
            s = s + a(j, i) * v[j]
        end
        out[i] = s
    end
end

local function mul_atav(n, v, out, tmp)
    mul_av(n, v, tmp)
    mul_atv(n, tmp, out)
end

local n = tonumber(arg and arg[1]) or 100
local u, v, tmp = {}, {}, {}
for i = 1, n do u[i] = 1.0; v[i] = 0.0; tmp[i] = 0.0 end
for _ = 1, 10 do
    mul_atav(n, u, v, tmp)
    mul_atav(n, v, u, tmp)
end
local vbv, vv = 0.0, 0.0
for i = 1, n do
    vbv = vbv + u[i] * v[i]
    vv = vv + v[i] * v[i]
end
print(string.format("%.9f", math.sqrt(vbv / vv)))
