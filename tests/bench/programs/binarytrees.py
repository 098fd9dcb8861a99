# binary-trees (Benchmarks Game): allocate and walk many perfect binary
# trees. A node is a list [left, right]; a leaf is the empty list.
import sys


def make_tree(depth):
    if depth == 0:
        return []
    depth -= 1
    return [make_tree(depth), make_tree(depth)]


def check(tree):
    if tree:
        return 1 + check(tree[0]) + check(tree[1])
    return 1


max_depth = int(sys.argv[1]) if len(sys.argv) > 1 else 10
min_depth = 4
max_depth = max(min_depth + 2, max_depth)
stretch = max_depth + 1
print("stretch tree of depth %d\t check: %d" % (stretch, check(make_tree(stretch))))
long_lived = make_tree(max_depth)
for depth in range(min_depth, max_depth + 1, 2):
    iterations = 2 ** (max_depth - depth + min_depth)
    total = 0
    for _ in range(iterations):
        total += check(make_tree(depth))
    print("%d\t trees of depth %d\t check: %d" % (iterations, depth, total))
print("long lived tree of depth %d\t check: %d" % (max_depth, check(long_lived)))
