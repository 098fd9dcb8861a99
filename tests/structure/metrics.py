#!/usr/bin/env python3
"""metrics.py — the house rules of src/ measured (doc/internals.md, "House rules").

Prints, for the C files of src/:
  * lines over 100 columns;
  * functions of 100 lines or more, by ctags extents (universal-ctags'
    line: and end: fields), longest first;
  * function definitions with 8 or more parameters (ctags' signature);
  * stated invariants (qh_assert, sv_assert) per 1,000 lines of C, overall
    and for gc.c, src/exec and src/array;
  * switches over a closed enum (RULE_ENUMS: the node kinds N_*, the
    operators OP_*, and the other enums whose every case a walker must
    handle) that have a `default:` label or lack one of the enum's
    enumerators (the sentinels N_NKINDS and OP_NOPS aside) — a switch is
    over one of those enums when one of its own case labels is an
    enumerator of it.  Value kinds (ValType) are open — type_register_new
    adds kinds at start-up and the rest of a kind's behaviour is its
    TypeOps table — so a switch over a value tag names only the built-in
    kinds it special-cases and sends the others to the table (its
    `default`): it is not counted.

With --check it also fails (exit 1) where a rule is broken: a `default:`
or a missing case in a switch over those enums (they must list every case and end in
qh_unreachable()) beyond --max-defaults (0 unless given: the switches
not yet converted are a ratchet that may only go down), and, when given
limits, more long functions or more functions with 8+ parameters than
allowed. Without universal-ctags the function counts are skipped (and
say so); the switch check needs none.

Usage: metrics.py SRC_DIR [--check] [--max-defaults N] [--max-long N] [--max-params N]
"""
import os
import re
import shutil
import subprocess
import sys

# The closed enums: a new enumerator must be handled by every switch over it, so
# such a switch lists every case and has no default (doc/internals.md, "Invariants
# and memory"). Their enumerators must not collide with another enum's.
RULE_ENUMS = ("NodeKind", "BinOp", "ExecStatus", "LoadKind", "FutState", "ExecTaskState",
              "QasmKind", "IoJsonKind")
# counts and bounds, not kinds: never a case label of a switch over the kinds
NOT_RULE = {"N_NKINDS", "OP_NOPS"}


def c_files(src):
    out = []
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith((".c", ".h")):
                out.append(os.path.join(root, f))
    return sorted(out)


def strip(text):
    """Comments and string/char literals blanked out (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n - 1) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def switches(code):
    """(line, labels, has_default) of each switch: its own case labels (not
    those of switches nested in it)."""
    res = []
    for m in re.finditer(r"\bswitch\s*\(", code):
        i, depth = m.end(), 1
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        while i < len(code) and code[i].isspace():
            i += 1
        if i >= len(code) or code[i] != "{":
            continue
        body_start, depth, j = i + 1, 1, i + 1
        own = []  # text at the switch's own brace level (nested switches cut out)
        seg = body_start
        while j < len(code) and depth:
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
            elif code.startswith("switch", j) and re.match(r"switch\s*\(", code[j:j + 20]) \
                    and not (code[j - 1].isalnum() or code[j - 1] == "_"):
                # skip the nested switch's body
                own.append(code[seg:j])
                k, d = code.index("(", j) + 1, 1
                while k < len(code) and d:
                    d += {"(": 1, ")": -1}.get(code[k], 0)
                    k += 1
                while k < len(code) and code[k].isspace():
                    k += 1
                if k < len(code) and code[k] == "{":
                    d, k = 1, k + 1
                    while k < len(code) and d:
                        d += {"{": 1, "}": -1}.get(code[k], 0)
                        k += 1
                seg = j = k
                continue
            j += 1
        own.append(code[seg:j])
        text = "".join(own)
        labels = re.findall(r"\bcase\s+([A-Za-z_]\w*)\s*:", text)
        has_default = re.search(r"\bdefault\s*:", text) is not None
        res.append((code.count("\n", 0, m.start()) + 1, labels, has_default))
    return res


def rule_enums(files):
    """enumerator -> enum name, for the RULE_ENUMS (from their typedefs)."""
    names = {}
    pat = r"typedef\s+enum\s+(%s)\s*\{([^}]*)\}" % "|".join(RULE_ENUMS)
    for f in files:
        code = strip(open(f, encoding="utf-8").read())
        for m in re.finditer(pat, code):
            for e in m.group(2).split(","):
                e = e.split("=")[0].strip()
                if e and e not in NOT_RULE:
                    names[e] = m.group(1)
    return names


def ctags_functions(files):
    """(file, name, start, end, nparams) of every function definition."""
    ctags = shutil.which("ctags")
    if not ctags:
        return None
    ver = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in ver:
        return None
    out = subprocess.run([ctags, "-f", "-", "--c-kinds=f", "--fields=+neS", "--language-force=C"]
                         + files, capture_output=True, text=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < 4:
            continue
        name, path = parts[0], parts[1]
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" not in fields or "end" not in fields:
            continue
        sig = fields.get("signature", "()").strip()
        inner = sig[1:-1].strip() if sig.startswith("(") else sig
        if inner in ("", "void"):
            nparams = 0
        else:
            depth, n = 0, 1
            for ch in inner:
                if ch in "([":
                    depth += 1
                elif ch in ")]":
                    depth -= 1
                elif ch == "," and depth == 0:
                    n += 1
            nparams = n
        funcs.append((path, name, int(fields["line"]), int(fields["end"]), nparams))
    return funcs


def main(argv):
    args = argv[1:]
    if not args:
        print(__doc__)
        return 2
    src = args[0]
    check = "--check" in args
    max_long = int(args[args.index("--max-long") + 1]) if "--max-long" in args else None
    max_params = int(args[args.index("--max-params") + 1]) if "--max-params" in args else None
    max_defaults = int(args[args.index("--max-defaults") + 1]) if "--max-defaults" in args else 0
    files = c_files(src)
    rel = lambda p: os.path.relpath(p, os.path.dirname(os.path.abspath(src)))
    total, long_lines, asserts = 0, [], {}
    bad_switch = []
    enum_of = rule_enums(files)
    for f in files:
        text = open(f, encoding="utf-8").read()
        lines = text.split("\n")
        if text.endswith("\n"):
            lines = lines[:-1]
        total += len(lines)
        for k, l in enumerate(lines, 1):
            if len(l) > 100:
                long_lines.append("%s:%d" % (rel(f), k))
        code = strip(text)
        asserts[f] = (len(re.findall(r"\b(qh_assert|sv_assert)\s*\(", code)), len(lines))
        for line, labels, has_default in switches(code):
            e = next((enum_of[lab] for lab in labels if lab in enum_of), None)
            if e and has_default:
                bad_switch.append("%s:%d: switch over %s has a default" % (rel(f), line, e))
            elif e:
                missing = [k for k, v in enum_of.items() if v == e and k not in labels]
                if missing:
                    bad_switch.append("%s:%d: switch over %s lacks %s" %
                                      (rel(f), line, e, ", ".join(missing)))

    def rate(sel):
        a = sum(asserts[f][0] for f in sel)
        n = sum(asserts[f][1] for f in sel)
        return a, n, (1000.0 * a / n if n else 0.0)

    print("C files under %s: %d, %d lines" % (rel(src), len(files), total))
    print("lines over 100 columns: %d" % len(long_lines))
    for l in long_lines[:10]:
        print("  " + l)
    funcs = ctags_functions(files)
    nlong = nparams = None
    if funcs is None:
        print("functions: universal-ctags not found (apt-get install universal-ctags): skipped")
    else:
        longf = sorted((f for f in funcs if f[3] - f[2] + 1 >= 100), key=lambda f: f[2] - f[3])
        manyp = [f for f in funcs if f[4] >= 8]
        nlong, nparams = len(longf), len(manyp)
        print("functions (ctags): %d; of 100 lines or more: %d" % (len(funcs), nlong))
        for f in longf:
            print("  %4d lines  %s:%d %s" % (f[3] - f[2] + 1, rel(f[0]), f[2], f[1]))
        print("function definitions with 8 or more parameters: %d" % nparams)
        for f in manyp:
            print("  %2d params  %s:%d %s" % (f[4], rel(f[0]), f[2], f[1]))
    a, n, r = rate(files)
    print("qh_assert/sv_assert: %d in %d lines: %.2f per 1,000 lines" % (a, n, r))
    for label, sel in (("src/gc.c", [f for f in files if f.endswith(os.sep + "gc.c")]),
                       ("src/exec", [f for f in files if os.sep + "exec" + os.sep in f]),
                       ("src/array", [f for f in files if os.sep + "array" + os.sep in f])):
        a, n, r = rate(sel)
        print("  %-10s %3d in %5d lines: %.2f per 1,000" % (label, a, n, r))
    print("switches over %s with a default or a case missing: %d" %
          ("/".join(RULE_ENUMS), len(bad_switch)))
    for b in bad_switch:
        print("  " + b)
    if not check:
        return 0
    bad = len(bad_switch) > max_defaults
    if bad:
        print("metrics: %d switches over a closed enum (node kind, operator, ...) with a default"
              " or a case missing (at most %d): list every case and end in qh_unreachable()" %
              (len(bad_switch), max_defaults))
    if max_long is not None and nlong is not None and nlong > max_long:
        print("metrics: %d functions of 100 lines or more (at most %d)" % (nlong, max_long))
        bad = True
    if max_params is not None and nparams is not None and nparams > max_params:
        print("metrics: %d functions with 8 or more parameters (at most %d)" % (nparams, max_params))
        bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
