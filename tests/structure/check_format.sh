#!/usr/bin/env bash
# check_format.sh — every C file of src/ and tests/ is as clang-format
# leaves it (the project's .clang-format: 100 columns), so a change that
# is not formatted fails `meson test`. The format is clang-format 14's
# (Debian 12): another major version may lay out the same code otherwise,
# so with another version, or none, the test is skipped (status 77) and
# says so; .ci/run installs clang-format.
# Usage: check_format.sh ROOT     Fix a file: clang-format -i FILE
set -u
root=${1:?usage: check_format.sh ROOT}
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
  echo "check_format: $cf is not installed (apt-get install clang-format): skipped"; exit 77
fi
ver=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$ver" != 14 ]; then
  echo "check_format: $cf is version $ver; the tree is formatted by version 14: skipped"; exit 77
fi
cd "$root" || exit 2
bad=0; n=0
while IFS= read -r f; do
  n=$((n+1))
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    "$cf" "$f" | diff "$f" - | head -10
    bad=$((bad+1))
  fi
done < <(find src tests -name '*.[ch]' -not -path '*/corpus-*' | sort)
long=$(find src tests -name '*.[ch]' -not -path '*/corpus-*' -exec awk 'length > 100 { print FILENAME ":" FNR }' {} + | head -5)
if [ -n "$long" ]; then echo "lines over 100 columns:"; echo "$long"; bad=$((bad+1)); fi
echo "check_format: $n files, $bad not formatted"
[ "$bad" = 0 ]
