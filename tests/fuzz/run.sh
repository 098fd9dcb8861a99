#!/usr/bin/env bash
# Runs the libFuzzer targets for a bounded time each.
# Usage: tests/fuzz/run.sh [BUILD_DIR] [TARGET...]
#   BUILD_DIR     a directory made by tests/fuzz/build.sh (default: build-fuzz)
#   TARGET        fuzz_parse, fuzz_run, fuzz_gen, fuzz_qasm, fuzz_json, fuzz_csv,
#                 fuzz_npy, fuzz_deser (default: all)
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_JOBS     fork-mode jobs for fuzz_run (default 1)
# The corpus of each target lives in tests/fuzz/corpus-TARGET/ (ignored by
# git) and grows from run to run; it is seeded every time from the
# conformance suite (../shared/conformance), tests/scripts, examples and
# tests/fuzz/regressions. Crashing inputs are written to
# BUILD_DIR/fuzz-artifacts/TARGET/; copy the real ones to
# tests/fuzz/regressions/ (tests/fuzz/regressions.sh replays them).
# Exit status 1 if any target found a crash, a sanitizer report or a leak.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/build-fuzz}
dir=$(cd "$dir" && pwd)
shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(fuzz_parse fuzz_run fuzz_gen fuzz_qasm fuzz_json fuzz_csv fuzz_npy fuzz_deser)
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}

export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=1024:malloc_context_size=30}
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export OPENBLAS_NUM_THREADS=1

# each run its own seed folder: CI runs two targets at once
seeds=$(mktemp -d "$dir/fuzz-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
for d in "$root/../shared/conformance" "$root/tests/scripts" "$root/examples" "$root/stdlib" "$root/tests/fuzz/regressions"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    [ -f "$f" ] || continue
    case "$f" in *.qh|*/regressions/*) cp "$f" "$seeds/$(basename "$d")-$(basename "$f")";; esac
  done
done

fail=0
for t in "${targets[@]}"; do
  exe=$dir/tests/fuzz/$t
  [ -x "$exe" ] || { echo "$t: not built ($exe); run tests/fuzz/build.sh" >&2; fail=1; continue; }
  corpus=$root/tests/fuzz/corpus-$t
  art=$dir/fuzz-artifacts/$t
  # the readers' seeds: valid files of their format and their regressions
  tseeds=$seeds
  case "$t" in
    fuzz_qasm|fuzz_json|fuzz_csv|fuzz_npy|fuzz_deser)
      tseeds=$dir/fuzz-seeds-$t; rm -rf "$tseeds"; mkdir -p "$tseeds"
      for d in "$root/tests/fuzz/seeds/$t" "$root/tests/fuzz/regressions/$t"; do
        [ -d "$d" ] && cp "$d"/* "$tseeds/" 2>/dev/null
      done
      [ "$t" = fuzz_qasm ] && cp "$root"/tests/qasm/circuits/*.qasm "$tseeds/" 2>/dev/null ;;
  esac
  mkdir -p "$corpus" "$art"
  log=$dir/fuzz-$t.log
  dict=(-dict="$root/tests/fuzz/qh.dict") # the language's words; the readers have none
  case "$t" in fuzz_qasm|fuzz_json|fuzz_csv|fuzz_npy|fuzz_deser) dict=() ;; esac
  opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048
        -close_fd_mask=3 "${dict[@]}" -print_final_stats=1
        -artifact_prefix="$art/")
  case "$t" in
    fuzz_parse) opts+=(-max_len=8192) ;;
    fuzz_run)   opts+=(-max_len=2048 -fork="$jobs" -ignore_timeouts=1 -ignore_ooms=1) ;;
    fuzz_gen)   opts+=(-max_len=256 -fork="$jobs" -ignore_timeouts=1 -ignore_ooms=1) ;;
    fuzz_qasm|fuzz_json|fuzz_csv) opts+=(-max_len=16384) ;;
    fuzz_npy)   opts+=(-max_len=4096) ;;
    fuzz_deser) opts+=(-max_len=512) ;;
  esac
  touch "$art/.start"
  start=$(date +%s)
  # A 64 MiB stack, as sanitizer builds of CPython give theirs: the parser's
  # bound of 20,000 operators in a row is sized for the front end's tree walks
  # on the default 8 MiB stack of a normal or ASan build; with libFuzzer's
  # coverage instrumentation on top, resolve_node's frame is over 400 bytes
  # and a 19,891-operator chain from fuzz_gen overflowed it (CI, 2026-12-03)
  (ulimit -s 65536 2>/dev/null; exec "$exe" "${opts[@]}" "$corpus" "$tseeds") >"$log" 2>&1
  st=$?
  took=$(( $(date +%s) - start ))
  # executions: -print_final_stats in plain mode, the last "#N:" status line in fork mode
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  ncorp=$(find "$corpus" -type f | wc -l)
  found=$(find "$art" -type f -newer "$art/.start" \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'slow-unit-*' \) | sort)
  echo "$t: ${execs:-?} executions in ${took}s, corpus $ncorp files, exit status $st"
  if [ "$st" != 0 ]; then
    fail=1
    echo "$t: FAILED; log: $log"
    grep -E -A30 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log" | grep -v '^ *$' | head -60 | sed 's/^/  | /'
  fi
  for a in $found; do
    echo "  artifact: $a ($(stat -c %s "$a") bytes)"
    head -c 300 "$a" | od -c | head -8 | sed 's/^/    /'
  done
done
exit $fail
