-- s = s .. "x", n times (default 200,000): appending to a string in a loop.
local function build(n)
    local s = ""
    for i = 1, n do
        s = s .. "x"
    end
    return s
end

local n = math.tointeger(tonumber(arg and arg[1])) or 200000
print(#build(n))
