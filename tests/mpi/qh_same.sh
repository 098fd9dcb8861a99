#!/usr/bin/env bash
# qh_same.sh QH PROGRAM.qh|DIR... — each program (a DIR: its *.qh but
# _*.qh, and with ONLY=GLOB those matching it) under `mpirun -n R qh` prints
# the same bytes as `qh --sync` (stdout, and stderr but for the --stats
# lines), with the same exit status. Header lines of a program:
#   # ranks: 2 3       rank counts to try (default: 2)
#   # args: ...        extra options for both runs (e.g. --workers 1)
#   # remote: yes      --stats must show tasks run by a rank other than 0
#   # stats: REGEX     (on more than one rank) --stats must show a line matching it
#   # golden: yes      compare with PROGRAM.out / PROGRAM.err (status=N in
#                      its first line) instead of a --sync run
set -u
qh=$1; shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's own allocations are not ours to check (see run.sh)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
symbolizer_noise='^LLVMSymbolizer: error reading file: '
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
header() { sed -n "s/^# $1: *//p" "$2" | head -1; }
progs=()
for a in "$@"; do
  if [ -d "$a" ]; then
    for f in "$a"/${ONLY:-*}.qh; do case $(basename "$f") in _*) ;; *) [ -f "$f" ] && progs+=("$f");; esac; done
  else progs+=("$a"); fi
done
for prog in "${progs[@]}"; do
  name=$(basename "$prog" .qh)
  dir=$(dirname "$prog")
  ranks=$(header ranks "$prog"); ranks=${ranks:-2}
  args=$(header args "$prog")
  remote=$(header remote "$prog")
  golden=$(header golden "$prog")
  stats=$(header stats "$prog")
  if [ "$golden" = yes ]; then
    cp "$dir/$name.out" "$tmp/want.out"
    if [ -f "$dir/$name.err" ]; then
      want_st=$(head -1 "$dir/$name.err" | sed -n 's/^status=//p')
      tail -n +2 "$dir/$name.err" > "$tmp/want.err"
    else want_st=0; : > "$tmp/want.err"; fi
  else
    (cd "$dir" && timeout 300 "$qh" --sync $args "$name.qh" > "$tmp/want.out" 2> "$tmp/want.err"); want_st=$?
  fi
  for r in $ranks; do
    n=$((n+1))
    (cd "$dir" && timeout 300 mpirun -q --oversubscribe --bind-to none -n "$r" "$qh" --stats $args "$name.qh" > "$tmp/got.out" 2> "$tmp/got.all"); st=$?
    # --stats lines, and the noise of TSan's symbolizer (see qh_mpirun.sh)
    grep -v -e '^qh stats: ' -e "$symbolizer_noise" "$tmp/got.all" > "$tmp/got.err"
    what="$name on $r ranks"
    if [ "$st" != "$want_st" ]; then echo "FAIL $what: status $st, want $want_st"; head -20 "$tmp/got.all"; fail=1; continue; fi
    if ! cmp -s "$tmp/want.out" "$tmp/got.out"; then echo "FAIL $what: stdout differs"; diff "$tmp/want.out" "$tmp/got.out" | head -20; fail=1; continue; fi
    if ! cmp -s "$tmp/want.err" "$tmp/got.err"; then echo "FAIL $what: stderr differs"; diff "$tmp/want.err" "$tmp/got.err" | head -20; fail=1; continue; fi
    if [ "$remote" = yes ] && [ "$r" -gt 1 ] && ! grep -q -E '^qh stats: rank [1-9][0-9]* .*: [1-9][0-9]* tasks \([1-9]' "$tmp/got.all"; then
      echo "FAIL $what: no task ran on another rank"; grep '^qh stats' "$tmp/got.all"; fail=1; continue
    fi
    if [ -n "$stats" ] && [ "$r" -gt 1 ] && ! grep -q -E "^qh stats: .*$stats" "$tmp/got.all"; then
      echo "FAIL $what: no --stats line matching '$stats'"; grep '^qh stats' "$tmp/got.all"; fail=1; continue
    fi
    echo "ok   $what"
  done
done
echo "$n runs, $([ $fail = 0 ] && echo all the same || echo SOME DIFFER)"
exit $fail
