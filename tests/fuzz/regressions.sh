#!/usr/bin/env bash
# Replays every input under tests/fuzz/regressions/ (crashes found by the
# fuzzers, the sanitizers and tests/sanitize/bad_inputs.sh) through qh:
#   qh --check FILE            exit status 0 or 2
#   qh FILE, qh --sync FILE    exit status 0, 1 or 2 within the time limit
# never a crash (status >= 128), a hang, or a sanitizer report on stderr.
# A file NAME.gen is a bash script whose standard output is the input (for
# inputs too big to keep in git). README* files are skipped.
# Usage: regressions.sh PATH/TO/qh [NAME...]
# REGRESSIONS_TIMEOUT: seconds per run (default 60).
set -u
qh=${1:?usage: regressions.sh PATH/TO/qh [NAME...]}
shift
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
dir=$(cd "$(dirname "$0")/regressions" 2>/dev/null && pwd) || { echo "fuzz regressions: no regressions folder"; exit 0; }
limit=${REGRESSIONS_TIMEOUT:-60}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
only=" $* "
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0

sanitizer_report() {
  grep -q -E 'ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)|WARNING: ThreadSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$1"
}

for f in "$dir"/*; do
  [ -f "$f" ] || continue
  name=$(basename "$f")
  case "$name" in README*) continue;; esac
  if [ "$#" -gt 0 ]; then case "$only" in *" $name "*) ;; *) continue;; esac; fi
  input=$f
  if [[ $name == *.gen ]]; then
    input=$tmp/${name%.gen}.qh
    bash "$f" >"$input" || { fail=$((fail+1)); echo "FAIL $name: generator failed"; continue; }
  fi
  for mode in --check "" --sync; do
    label="$name${mode:+ $mode}"
    allowed="0 1 2"; [ "$mode" = --check ] && allowed="0 2"
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$qh" $mode "$input" </dev/null >"$tmp/out" 2>"$tmp/err"
    st=$?; why=""
    if sanitizer_report "$tmp/err"; then why="sanitizer report (status $st)"
    elif [ "$st" = 124 ] || [ "$st" = 137 ]; then why="timed out after ${limit}s"
    elif [ "$st" -ge 128 ]; then why="crashed: status $st (signal $((st - 128)))"
    elif [[ " $allowed " != *" $st "* ]]; then why="exit status $st, expected one of: $allowed"
    elif [ "$st" != 0 ] && ! grep -q -i -E 'error|warning' "$tmp/err"; then why="exit status $st with no message on stderr"
    fi
    if [ -z "$why" ]; then pass=$((pass+1)); else
      fail=$((fail+1)); echo "FAIL $label: $why"
      sed 's/^/  stderr| /' "$tmp/err" | grep -v '^  stderr| *$' | head -12
    fi
  done
done
echo "fuzz regressions: $pass passed, $fail failed"
[ "$fail" = 0 ]
