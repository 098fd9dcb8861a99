-- bedcov (plb2): n random intervals in an implicit interval tree (a sorted
-- array whose element i also holds the largest end in its subtree); for n
-- other random intervals, the overlapping ones are found and the length
-- they cover is summed. Random numbers: splitmix32, with 32-bit products
-- split into 16-bit halves as in the other ports. Tree positions are
-- 0-based (the bit arithmetic needs it); table index = position + 1.
local function mul32(a, b)
    local ah, al = a >> 16, a & 0xffff
    local bh, bl = b >> 16, b & 0xffff
    local high = (ah * bl + al * bh) & 0xffff
    return ((high << 16) + al * bl) & 0xffffffff
end

local function splitmix32(seed)
    local state = seed
    return function()
        state = (state + 0x9e3779b9) & 0xffffffff
        local t = state ~ (state >> 16)
        t = mul32(t, 0x21f0aaad)
        t = t ~ (t >> 15)
        t = mul32(t, 0x735a2d97)
        return t ~ (t >> 15)
    end
end

local function gen_intervals(n, rng, bits_start, bits_len)
    local mask_start = (1 << bits_start) - 1
    local mask_len = (1 << bits_len) - 1
    local a = {}
    for i = 1, n do
        local st = rng() & mask_start
        a[i] = { st, st + (rng() & mask_len), 0 }
    end
    return a
end

local function index(a)
    local n = #a
    local last, last_i = 0, 0
    for i = 0, n - 1, 2 do
        a[i + 1][3] = a[i + 1][2]
        last, last_i = a[i + 1][3], i
    end
    local k = 1
    while 1 << k < n do
        local x = 1 << (k - 1)
        for i = (1 << k) - 1, n - 1, 1 << (k + 1) do
            local left = a[i - x + 1][3]
            local right = i + x < n and a[i + x + 1][3] or last
            local e = a[i + 1][2]
            if left > e then
                e = left
            end
            if right > e then
                e = right
            end
            a[i + 1][3] = e
        end
        last_i = (last_i >> k) & 1 ~= 0 and last_i - x or last_i + x
        if last_i < n and a[last_i + 1][3] > last then
            last = a[last_i + 1][3]
        end
        k = k + 1
    end
    return k - 1
end

local function overlap(a, max_level, st, en)
    local n = #a
    local stack = { { max_level, (1 << max_level) - 1, 0 } }
    local found = {}
    while #stack > 0 do
        local top = table.remove(stack)
        local k, x, w = top[1], top[2], top[3]
        if k <= 3 then
            local i = x >> k << k
            local i1 = i + (1 << (k + 1)) - 1
            if i1 > n then
                i1 = n
            end
            while i < i1 and a[i + 1][1] < en do
                if st < a[i + 1][2] then
                    found[#found + 1] = a[i + 1]
                end
                i = i + 1
            end
        elseif w == 0 then
            stack[#stack + 1] = { k, x, 1 }
            local y = x - (1 << (k - 1))
            if y >= n or a[y + 1][3] > st then
                stack[#stack + 1] = { k - 1, y, 0 }
            end
        elseif x < n and a[x + 1][1] < en then
            if st < a[x + 1][2] then
                found[#found + 1] = a[x + 1]
            end
            stack[#stack + 1] = { k - 1, x + (1 << (k - 1)), 0 }
        end
    end
    return found
end

local n = math.tointeger(tonumber(arg and arg[1])) or 10000
local rng = splitmix32(11)
local a1 = gen_intervals(n, rng, 28, 14)
table.sort(a1, function(p, q) return p[1] < q[1] end)
local a2 = gen_intervals(n, rng, 28, 14)
local max_level = index(a1)
local total = 0
for _, iv in ipairs(a2) do
    local st1, en1 = iv[1], iv[2]
    local cov, cov_st, cov_en = 0, 0, 0
    for _, item in ipairs(overlap(a1, max_level, st1, en1)) do
        local st0 = item[1] > st1 and item[1] or st1
        local en0 = item[2] < en1 and item[2] or en1
        if st0 > cov_en then
            cov = cov + (cov_en - cov_st)
            cov_st, cov_en = st0, en0
        elseif en0 > cov_en then
            cov_en = en0
        end
    end
    cov = cov + (cov_en - cov_st)
    total = total + cov
end
print(total)
