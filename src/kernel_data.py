#!/usr/bin/env python3
"""kernel_data.py — what the notebook kernel (src/kernel.c) carries, made at
build time: the builtins' signatures and descriptions for its inspect,
from the reference's tables (lang/*.md: rows "| `name(args)` | description
|"), so help in a notebook says what the reference says; and its logo
(src/kernel_logo.svg, also installed beside kernel.json by meson) for
qh --install-kernel.

Usage: kernel_data.py OUT.h LOGO.svg LANG.md..."""
import re
import sys

ROW = re.compile(r"^\|\s*(`[A-Za-z_][A-Za-z0-9_.]*\(.*?)\s*\|\s*(.*?)\s*\|\s*$")
SIG = re.compile(r"`([A-Za-z_][A-Za-z0-9_.]*)\((.*?)\)`")


def plain(md):
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)   # links: their text
    md = md.replace("`", "").replace("**", "").replace("\\|", "|")
    return md


def c_str(s):
    out = ['"']
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append("\\%03o" % ch)
    out.append('"')
    return "".join(out)


def main():
    out, logo, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen = {}
    for page in pages:
        for line in open(page, encoding="utf-8"):
            m = ROW.match(line.rstrip("\n"))
            if not m:
                continue
            desc = plain(m.group(2))
            for name, args in SIG.findall(m.group(1)):
                if name not in seen:
                    seen[name] = ("%s(%s)" % (name, plain(args)), desc)
    with open(out, "w", encoding="utf-8") as f:
        f.write("/* kernel_data.h — made by src/kernel_data.py from the tables of lang/ and\n"
                " * src/kernel_logo.svg: do not edit */\n")
        f.write("typedef struct BuiltinDoc {\n    const char *name, *sig, *doc;\n} BuiltinDoc;\n")
        f.write("static const BuiltinDoc builtin_docs[] = {\n")
        for name in sorted(seen):
            sig, desc = seen[name]
            f.write("    { %s, %s, %s },\n" % (c_str(name), c_str(sig), c_str(desc)))
        f.write("    { 0, 0, 0 },\n};\n")
        f.write("static const char kernel_logo_svg[] = %s;\n" % c_str(open(logo, encoding="utf-8").read()))


if __name__ == "__main__":
    main()
