#!/usr/bin/env python3
"""check_graph.py — the dependency graph of src/ keeps its three tiers, has
no cycle among the core rooms, and doc/internals.md shows it as it is.

A room is a file name without its extension (value.c and value.h are the
room `value`). The core rooms live in three tiers, each a folder:

  * front  (src/front): text to an annotated AST. It knows only the values
    (value, gc), the builtin table (builtins) and the lower rooms;
  * interp (src/*.c but the hosts): the interpreter proper. It knows the
    front end and the lower rooms, never a room of src/lib, except the
    start-up (qh.c), which registers them;
  * lib    (src/lib): the rooms that register kinds and builtins. They know
    the interpreter and the front end, never a host;
  * the hosts (main, repl, kernel, kernel_none, remote, remote_none) may know
    everything.

The other folders under src/ (array, exec, quantum, util, ...) are the lower
rooms: none includes a header of a core room. Two graphs are built:

  * includes: room A -> room B when a file of A includes B's header;
  * calls (with a build directory): room A -> room B when A's object file
    uses a symbol B's object file defines (nm), so a declaration written by
    hand (`void f(void);` in a .c file) cannot hide an edge.

Both must respect the tiers and be acyclic, except inside the groups named
in GROUPS (one room split across files, e.g. the evaluator's eval.c and
call.c, which recurse into each other by nature, like Lua's lvm.c and
ldo.c). The include graph, printed by --print, is the block between
"<!-- graph -->" and "<!-- /graph -->" in doc/internals.md: the check fails
when they differ (run with --print and paste to update).

Usage: check_graph.py SRC_DIR DOC [BUILD_DIR]   check (exit 1 on a problem)
       check_graph.py --print SRC_DIR            the graph block
"""
import os
import re
import subprocess
import sys

GROUPS = [{"eval", "call"}, {"value", "gc"},
          {"lib/qrt", "lib/qrt_impl", "lib/qrt_op", "lib/qrt_gate", "lib/qrt_obs", "lib/qrt_chan",
           "lib/qrt_meas"}, {"lib/track", "lib/track_np", "lib/track_cx"}]  # one room, several files
HOSTS = {"main", "repl", "kernel", "kernel_none", "remote", "remote_none"}
STARTUP = {"qh"}                      # the interpreter's start-up: registers the lib rooms
FRONT_MAY_KNOW = {"value", "gc", "builtins"}
TIER_DIRS = {"front": "front", "lib": "lib"}


def group_of(room):
    for g in GROUPS:
        if room in g:
            return "+".join(sorted(g))
    return room


def includes(path):
    text = open(path, encoding="utf-8").read()
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)


def core_files(src):
    """(path, room) of every file of the three tiers; a room of front or lib
    is named with its folder (front/parse, lib/qrt)"""
    out = []
    for f in sorted(os.listdir(src)):
        if f.endswith((".c", ".h")):
            out.append((os.path.join(src, f), os.path.splitext(f)[0]))
    for d in sorted(TIER_DIRS):
        p = os.path.join(src, d)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith((".c", ".h")):
                    out.append((os.path.join(p, f), d + "/" + os.path.splitext(f)[0]))
    return out


def core_rooms(src):
    return sorted({r for _, r in core_files(src)})


def tier(room):
    if room.startswith("front/"):
        return "front"
    if room.startswith("lib/"):
        return "lib"
    if room in HOSTS:
        return "host"
    return "interp"


def lower_rooms(src):
    """header name -> lower room folder"""
    owner = {}
    for d in sorted(os.listdir(src)):
        p = os.path.join(src, d)
        if os.path.isdir(p) and d not in TIER_DIRS:
            for f in os.listdir(p):
                if f.endswith(".h"):
                    owner[f] = d
    return owner


def tier_problem(a, b):
    """why room a may not depend on core room b, or None"""
    ta, tb = tier(a), tier(b)
    if ta == "front" and tb != "front" and b not in FRONT_MAY_KNOW:
        return "the front end knows only values, the builtin table and util/"
    if ta == "interp" and tb == "lib" and a not in STARTUP:
        return "the interpreter proper does not know the rooms of src/lib (only the start-up registers them)"
    if ta in ("interp", "front", "lib") and tb == "host" :
        return "no room knows a host (main, repl, remote)"
    return None


def include_graph(src):
    files = core_files(src)
    by_header = {}
    for path, room in files:
        if path.endswith(".h"):
            by_header[os.path.basename(path)] = room
    lower = lower_rooms(src)
    edges, problems = {}, []
    for path, room in files:
        for h in includes(path):
            base = os.path.basename(h)
            target = by_header.get(base)
            if target is not None and target != room:
                edges.setdefault(room, set()).add(target)
                why = tier_problem(room, target)
                if why:
                    problems.append("%s includes %s: %s" % (os.path.relpath(path, os.path.dirname(src)), h, why))
            elif target is None and base in lower:
                edges.setdefault(room, set()).add(lower[base] + "/")
    for d in sorted(os.listdir(src)):
        p = os.path.join(src, d)
        if not os.path.isdir(p) or d in TIER_DIRS:
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                for h in includes(os.path.join(p, f)):
                    if os.path.basename(h) in by_header and os.path.basename(h) not in lower:
                        problems.append("lower room src/%s/%s includes the core header %s" % (d, f, h))
    return edges, problems


def object_room(build, path):
    """an object file of meson's (src/front/libqhfront.a.p/parse.c.o,
    src/libqhinterp.a.p/eval.c.o) -> its room"""
    parts = os.path.relpath(path, build).split(os.sep)
    stem = parts[-1][: -len(".c.o")]
    if len(parts) == 4 and parts[1] in TIER_DIRS:
        return parts[1] + "/" + stem
    return stem


def call_graph(src, build):
    """room -> rooms whose definitions its object file uses (core rooms
    only; the hosts main and repl are left out, as they may use anything)"""
    rooms = set(core_rooms(src))
    objs = []
    for root, dirs, files in os.walk(os.path.join(build, "src")):
        if os.path.basename(root).startswith("libqh") and root.endswith(".a.p"):
            for f in files:
                if f.endswith(".c.o"):
                    room = object_room(build, os.path.join(root, f))
                    if room in rooms:
                        objs.append((os.path.join(root, f), room))
    if not any(r == "value" for _, r in objs):
        return None
    defined, used = {}, {}
    for path, room in objs:
        out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
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
    for room in sorted(edges, key=lambda r: (["front", "interp", "lib", "host"].index(tier(r)), r)):
        lines.append("%-16s -> %s" % (room, " ".join(sorted(edges[room]))))
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
            for a in sorted(calls):
                for b in sorted(calls[a]):
                    why = tier_problem(a, b)
                    if why:
                        print("%s calls %s: %s" % (a, b, why))
                        bad = True
            for c in cycles(calls):
                print("call cycle among core rooms: %s" % " <-> ".join(c))
                bad = True
    if not bad:
        print("check_graph: %d core rooms in three tiers, no include%s cycle, the documented graph is current"
              % (len(core_rooms(src)), " or call" if len(args) == 3 else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
