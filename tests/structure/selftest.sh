#!/usr/bin/env bash
# selftest.sh — the structure checks fail where they must (issue 22): on a
# copy of the tree, each check passes as the tree is, then fails on one
# planted fault of its class, naming it:
#   - a file that includes a room of the wrong tier (the front end a room
#     of src/lib, the interpreter proper a room of src/lib, a lower room a
#     core header): check_graph.py;
#   - a switch over a closed enum (NodeKind, BinOp) with a default or a
#     missing case, a 100-line function, an 8-parameter definition:
#     metrics.py --check with the limits at 0;
#   - a C file clang-format would change, a line over 100 columns:
#     check_format.sh.
# Usage: selftest.sh ROOT
set -u
root=${1:?usage: selftest.sh ROOT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fresh() { # a clean copy of src/, doc/ and .clang-format in $tmp/t
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t"
  cp -r "$root/src" "$root/doc" "$root/.clang-format" "$tmp/t/"
}
# expect NAME STATUS PATTERN CMD...: CMD exits with STATUS (0 or nonzero)
# and, when it must fail, prints PATTERN
expect() {
  local name=$1 want=$2 pat=$3 out st
  shift 3
  out=$("$@" 2>&1)
  st=$?
  if [ "$want" = 0 ] && [ "$st" != 0 ]; then
    echo "FAIL $name: the clean tree fails:"; echo "$out" | head -5; fails=$((fails + 1)); return
  fi
  if [ "$want" != 0 ] && { [ "$st" = 0 ] || ! grep -q -- "$pat" <<<"$out"; }; then
    echo "FAIL $name: status $st, expected a failure naming '$pat':"; echo "$out" | head -5
    fails=$((fails + 1)); return
  fi
  echo "ok   $name"
}
# plant FILE TEXT: TEXT after FILE's first #include line
plant() {
  "$py" - "$1" "$2" <<'EOF'
import sys
p, text = sys.argv[1], sys.argv[2]
s = open(p).read()
i = s.index("#include")
open(p, "w").write(s[:i] + text + "\n" + s[i:])
EOF
}
# append FILE TEXT
append() { printf '%s\n' "$2" >>"$1"; }

graph() { "$py" "$here/check_graph.py" "$tmp/t/src" "$tmp/t/doc/internals.md"; }
metrics() { "$py" "$here/metrics.py" "$tmp/t/src" --check --max-defaults 0 --max-long 0 --max-params 0; }

fresh
expect "graph: the tree as it is" 0 "" graph
expect "metrics: the tree as it is" 0 "" metrics

fresh; plant "$tmp/t/src/front/parse.c" '#include "grad.h"'
expect "graph: the front end includes a room of src/lib" 1 "parse.c includes grad.h" graph
fresh; plant "$tmp/t/src/eval.c" '#include "lookahead.h"'
expect "graph: the interpreter proper includes a room of src/lib" 1 "eval.c includes lookahead.h" graph
fresh; plant "$tmp/t/src/array/array.c" '#include "value.h"'
expect "graph: a lower room includes a core header" 1 "array.c includes the core header value.h" graph

fresh; append "$tmp/t/src/front/analyse.c" '
int selftest_kind(const Node *n);
int selftest_kind(const Node *n)
{
    switch (n->kind) {
    case N_NUM: return 1;
    default: return 0;
    }
}'
expect "metrics: a switch over NodeKind with a default" 1 "switch over NodeKind has a default" metrics
fresh; append "$tmp/t/src/eval.c" '
int selftest_op(BinOp op);
int selftest_op(BinOp op)
{
    switch (op) {
    case OP_ADD: return 1;
    }
    return 0;
}'
expect "metrics: a switch over BinOp missing cases" 1 "switch over BinOp" metrics
fresh; {
  printf 'int selftest_long(int x);\nint selftest_long(int x)\n{\n'
  for i in $(seq 1 100); do printf '    x += %d;\n' "$i"; done
  printf '    return x;\n}\n'
} >>"$tmp/t/src/gc.c"
if command -v ctags >/dev/null 2>&1 && ctags --version 2>/dev/null | grep -q Universal; then
  expect "metrics: a function of 100 lines" 1 "selftest_long" metrics
  fresh; append "$tmp/t/src/gc.c" '
int selftest_params(int a, int b, int c, int d, int e, int f, int g, int h);
int selftest_params(int a, int b, int c, int d, int e, int f, int g, int h)
{
    return a + b + c + d + e + f + g + h;
}'
  expect "metrics: a definition with 8 parameters" 1 "selftest_params" metrics
else
  echo "skip metrics' function counts: universal-ctags is not installed"
fi

# clang-format: a small tree of its own (the whole tree takes half a minute)
if command -v "${CLANG_FORMAT:-clang-format}" >/dev/null 2>&1; then
  fmt() { bash "$here/check_format.sh" "$tmp/f"; }
  rm -rf "$tmp/f"; mkdir -p "$tmp/f/src" "$tmp/f/tests"; cp "$root/.clang-format" "$tmp/f/"
  cp "$root/src/gc.h" "$tmp/f/src/"
  out=$(fmt 2>&1); st=$?
  if [ "$st" = 77 ]; then
    echo "skip check_format: $out"
  else
    expect "format: a formatted file" 0 "" fmt
    printf 'int  selftest_fmt( int x ){return x;}\n' >"$tmp/f/src/bad.c"
    expect "format: a file clang-format would change" 1 "not formatted: src/bad.c" fmt
    rm "$tmp/f/src/bad.c"
    printf '/* %s */\n' "$(printf 'x%.0s' $(seq 1 100))" >"$tmp/f/src/wide.h"
    expect "format: a line over 100 columns" 1 "src/wide.h" fmt
  fi
fi

echo "structure selftest: $fails failed"
[ "$fails" = 0 ]
