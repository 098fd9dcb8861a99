#!/usr/bin/env python3
"""check_graph.py — the dependency graph of src/ has no cycle among the core
rooms, and doc/internals.md shows it as it is.

A room is a file name without its extension (value.c and value.h are the
room `value`); the files of src/ are the core rooms, the folders under src/
(array, exec, quantum, util, ...) are the lower rooms. Two graphs are built:

  * includes: room A -> room B when a file of A includes B's header;
  * calls (with a build directory): room A -> room B when A's object file
    uses a symbol B's object file defines (nm), so a declaration written by
    hand (`void f(void);` in a .c file) cannot hide an edge.

Both must be acyclic, except inside the groups named in GROUPS (one room
split across files, e.g. the evaluator's eval.c and call.c, which recurse
into each other by nature, like Lua's lvm.c and ldo.c). A lower room must not
include a core header. The include graph, printed by --print, is the block
between "<!-- graph -->" and "<!-- /graph -->" in doc/internals.md: the
check fails when they differ (run with --print and paste to update).

Usage: check_graph.py SRC_DIR DOC [BUILD_DIR]   check (exit 1 on a problem)
       check_graph.py --print SRC_DIR            the graph block
"""
import os
import re
import subprocess
import sys

GROUPS = [{"eval", "call"}, {"async", "lookahead"}, {"value", "gc"}]     # one room in several files: mutual calls allowed


def group_of(room):
    for g in GROUPS:
        if room in g:
            return "+".join(sorted(g))
    return room


def includes(path):
    text = open(path, encoding="utf-8").read()
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)


def core_rooms(src):
    return sorted({os.path.splitext(f)[0] for f in os.listdir(src) if f.endswith((".c", ".h"))})


def lower_rooms(src):
    """header name -> lower room folder"""
    owner = {}
    for d in sorted(os.listdir(src)):
        p = os.path.join(src, d)
        if os.path.isdir(p):
            for f in os.listdir(p):
                if f.endswith(".h"):
                    owner[f] = d
    return owner


def include_graph(src):
    core = set(core_rooms(src))
    lower = lower_rooms(src)
    edges, problems = {}, []
    for f in sorted(os.listdir(src)):
        if not f.endswith((".c", ".h")):
            continue
        room = os.path.splitext(f)[0]
        for h in includes(os.path.join(src, f)):
            target = os.path.splitext(os.path.basename(h))[0]
            if target in core and target != room:
                edges.setdefault(room, set()).add(target)
            elif target not in core and os.path.basename(h) in lower:
                edges.setdefault(room, set()).add(lower[os.path.basename(h)] + "/")
    for d in sorted(os.listdir(src)):
        p = os.path.join(src, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                for h in includes(os.path.join(p, f)):
                    if os.path.splitext(os.path.basename(h))[0] in core and os.path.basename(h) not in lower:
                        problems.append("lower room src/%s/%s includes the core header %s" % (d, f, h))
    return edges, problems


def call_graph(src, build):
    """room -> rooms whose definitions its object file uses (core rooms only)"""
    objdir = None
    for root, dirs, files in os.walk(build):
        if any(f.endswith(".c.o") and f.startswith("value.c") for f in files) and "qhcore" in root:
            objdir = root
            break
    if not objdir:
        return None
    defined, used = {}, {}
    for f in os.listdir(objdir):
        if not f.endswith(".c.o"):
            continue
        room = f[: -len(".c.o")].split("_")[-1] if False else os.path.splitext(f[: -len(".o")])[0]
        out = subprocess.run(["nm", os.path.join(objdir, f)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRC":
                defined[parts[2]] = room
            elif len(parts) == 2 and parts[0] == "U":
                used.setdefault(room, set()).add(parts[1])
    edges = {}
    for room, syms in used.items():
        for s in syms:
            t = defined.get(s)
            if t and t != room:
                edges.setdefault(room, set()).add(t)
    return edges


def cycles(edges):
    """strongly connected components with more than one group"""
    nodes = set(edges) | {t for ts in edges.values() for t in ts}
    g = {}
    for a, ts in edges.items():
        for b in ts:
            ga, gb = group_of(a), group_of(b)
            if ga != gb:
                g.setdefault(ga, set()).add(gb)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted({group_of(n) for n in nodes}):
        if v not in index:
            visit(v)
    return out


def render(edges):
    lines = []
    for room in sorted(edges):
        lines.append("%-10s -> %s" % (room, " ".join(sorted(edges[room]))))
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--print"] and len(args) == 2:
        print(render(include_graph(args[1])[0]))
        return 0
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    src, doc = args[0], args[1]
    bad = False
    edges, problems = include_graph(src)
    for p in problems:
        print(p)
        bad = True
    for c in cycles(edges):
        print("include cycle among core rooms: %s" % " <-> ".join(c))
        bad = True
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"<!-- graph -->\s*```text\n(.*?)```\s*<!-- /graph -->", text, re.S)
    if not m:
        print("%s: no graph block between <!-- graph --> and <!-- /graph -->" % doc)
        bad = True
    elif m.group(1).strip() != render(edges).strip():
        print("%s: the include graph has changed; update the block with:\n  %s --print %s" % (doc, sys.argv[0], src))
        bad = True
    if len(args) == 3:
        calls = call_graph(src, args[2])
        if calls is None:
            print("no object files of the core library under %s" % args[2])
            bad = True
        else:
            for c in cycles(calls):
                print("call cycle among core rooms: %s" % " <-> ".join(c))
                bad = True
    if not bad:
        print("check_graph: %d core rooms, no include%s cycle, the documented graph is current"
              % (len(core_rooms(src)), " or call" if len(args) == 3 else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
