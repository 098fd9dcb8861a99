-- mandelbrot (Benchmarks Game): the n x n bitmap of the Mandelbrot set over
-- [-1.5, 0.5] x [-1, 1], 50 iterations, 8 pixels packed per byte (the P4
-- rows). Instead of writing the binary bitmap, prints a checksum of its
-- bytes (h = (33 h + byte) mod 2^32), which the other ports must match.
local n = math.tointeger(tonumber(arg and arg[1])) or 200
local h = 0
for y = 0, n - 1 do
    local ci = 2.0 * y / n - 1.0
    local bits = 0
    local nbits = 0
    for x = 0, n - 1 do
        local cr = 2.0 * x / n - 1.5
        local zr, zi, tr, ti = 0.0, 0.0, 0.0, 0.0
        local escaped = false
        for _ = 1, 50 do
            zi = 2.0 * zr * zi + ci
            zr = tr - ti + cr
            tr = zr * zr
            ti = zi * zi
            if tr + ti > 4.0 then
                escaped = true
                break
            end
        end
        bits = bits << 1
        if not escaped then
            bits = bits | 1
        end
        nbits = nbits + 1
        if nbits == 8 then
            h = (h * 33 + bits) & 0xffffffff
            bits = 0
            nbits = 0
        end
    end
    if nbits > 0 then
        h = (h * 33 + (bits << (8 - nbits))) & 0xffffffff
    end
end
print(string.format("P4 %d %d checksum %d", n, n, h))
