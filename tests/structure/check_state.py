#!/usr/bin/env python3
"""check_state.py — mutable state outside Interp and VM, checked against the
list in doc/internals.md so it cannot grow unnoticed.

Every object of static storage duration in src/*.c (the core rooms) that is
not const — file-scope `static` or global variables, `_Thread_local` ones,
and `static` variables inside functions — must be listed in the section
"File-scope state" of doc/internals.md as a line

    - `FILE: NAME` — why it is not in Interp or VM

and every listed one must still exist. Constant tables (`static const T x[]`,
`static const T *const p`) are not state and are not listed.

Usage: check_state.py SRC_DIR DOC_FILE    (exit 0 if they agree, 1 otherwise)
"""
import os
import re
import sys


def strip(text):
    """Removes comments, string and character literals (keeps newlines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def statements(code):
    """(depth, text) of each ';'-terminated piece, with its brace depth
    (0: file scope). Braces of initialisers and of struct, union and enum
    bodies stay inside their piece; preprocessor lines (with their
    continuations) are dropped."""
    code = code.replace("\\\n", " ")
    code = "\n".join(l for l in code.split("\n") if not l.lstrip().startswith("#"))
    depth, start, inner = 0, 0, 0
    for i, c in enumerate(code):
        if c == "{":
            before = code[start:i].rstrip()
            if inner or before.endswith("=") or (depth == 0 and not before.endswith(")")) \
                    or re.search(r"\b(struct|union|enum)(\s+\w+)?$", before):
                inner += 1
            else:
                depth += 1
                start = i + 1
        elif c == "}":
            if inner:
                inner -= 1
            else:
                depth -= 1
                start = i + 1
        elif c == ";" and not inner:
            yield depth, code[start:i].strip()
            start = i + 1


def split_declarators(decl):
    """'T a, *b, c[3]' -> ['T a', 'T *b', 'T c[3]'] (commas outside brackets)"""
    parts, depth, cur = [], 0, ""
    for c in decl:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    if len(parts) == 1:
        return parts
    m = re.match(r"^(.*?)([*\s]*[A-Za-z_]\w*\s*(\[[^\]]*\]\s*)*)$", parts[0].strip())
    base = m.group(1) if m else ""
    return [parts[0]] + [base + " " + p.strip() for p in parts[1:]]


def mutable_names(stmt, in_function):
    """The names declared by stmt that are mutable objects of static
    storage duration."""
    s = " ".join(stmt.split())
    if not s or re.match(r"^(typedef|extern|return)\b", s):
        return []
    if in_function and not re.match(r"^(static|_Thread_local)\b", s):
        return []
    out = []
    for part in split_declarators(s):
        decl = part.split("=", 1)[0].strip()
        if "(" in decl and not re.search(r"\(\s*\*", decl):
            continue                      # a function prototype
        m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$", decl)
        if not m:
            continue
        head = re.sub(r"\{.*\}", " ", decl[: m.start()])     # a struct body in the type
        if not head.strip():
            continue
        # const object: the declarator's last '*' is followed by const, or no '*' and const in the type
        if "*" in head:
            if re.search(r"\*\s*const\s*$", head):
                continue
        elif re.search(r"\bconst\b", head):
            continue
        out.append(m.group(1))
    return out


TIERS = ("front", "lib", "util")     # the folders scanned besides src/ itself


def scan(src_dir):
    found = set()
    for root, dirs, files in os.walk(src_dir):
        dirs[:] = sorted(d for d in dirs if d in TIERS) if root == src_dir else []
        for f in sorted(files):
            if f.endswith(".c"):
                rel = os.path.relpath(os.path.join(root, f), src_dir)
                scan_file(found, os.path.join(root, f), rel)
    return found


def scan_file(found, path, f):
    if True:
        code = strip(open(path, encoding="utf-8").read())
        for depth, st in statements(code):
            # struct members and locals are not static storage; only file scope
            # and explicit statics count
            for name in mutable_names(st, depth > 0):
                found.add("src/%s: %s" % (f, name))


def listed(doc):
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"^## File-scope state\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        sys.exit("check_state: %s has no '## File-scope state' section" % doc)
    return set(re.findall(r"^- `(src/[\w./]+: \w+)`", m.group(1), re.M))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    found, doc = scan(sys.argv[1]), listed(sys.argv[2])
    bad = False
    for x in sorted(found - doc):
        print("not listed in doc/internals.md (move it into Interp or VM, or say why): %s" % x)
        bad = True
    for x in sorted(doc - found):
        print("listed in doc/internals.md but gone: %s" % x)
        bad = True
    if not bad:
        print("check_state: %d objects of file-scope state, all listed" % len(found))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
