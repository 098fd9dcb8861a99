-- binary-trees (Benchmarks Game): allocate and walk many perfect binary
-- trees. A node is a table {left, right}; a leaf is the empty table.
local function make_tree(depth)
    if depth == 0 then
        return {}
    end
    depth = depth - 1
    return { make_tree(depth), make_tree(depth) }
end

local function check(tree)
    if tree[1] then
        return 1 + check(tree[1]) + check(tree[2])
    end
    return 1
end

local max_depth = tonumber(arg and arg[1]) or 10
local min_depth = 4
max_depth = math.max(min_depth + 2, max_depth)
local stretch = max_depth + 1
print(string.format("stretch tree of depth %d\t check: %d", stretch, check(make_tree(stretch))))
local long_lived = make_tree(max_depth)
for depth = min_depth, max_depth, 2 do
    local iterations = 2 ^ (max_depth - depth + min_depth)
    local total = 0
    for _ = 1, iterations do
        total = total + check(make_tree(depth))
    end
    print(string.format("%d\t trees of depth %d\t check: %d", iterations, depth, total))
end
print(string.format("long lived tree of depth %d\t check: %d", max_depth, check(long_lived)))
