# s += "x", n times (default 200,000): appending to a string in a loop.
import sys


def build(n):
    s = ""
    for i in range(n):
        s += "x"
    return s


n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
print(len(build(n)))
