#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_parse, fuzz_run, fuzz_gen and
# the readers' fuzz_qasm, fuzz_json, fuzz_csv, fuzz_npy, fuzz_deser)
# in a build directory of their own, with clang, the whole tree instrumented
# for coverage (-fsanitize=fuzzer-no-link) and AddressSanitizer + UBSan.
# Usage: tests/fuzz/build.sh [BUILD_DIR]     (default: build-fuzz)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/build-fuzz}
command -v clang >/dev/null || { echo "build.sh: clang is needed for libFuzzer" >&2; exit 1; }
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" "$root" -Dfuzz=true -Dbuildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fsanitize=fuzzer-no-link >"$dir.setup.log" 2>&1 \
    || { cat "$dir.setup.log" >&2; exit 1; }
fi
ninja -C "$dir" tests/fuzz/fuzz_parse tests/fuzz/fuzz_run tests/fuzz/fuzz_gen \
  tests/fuzz/fuzz_qasm tests/fuzz/fuzz_json tests/fuzz/fuzz_csv tests/fuzz/fuzz_npy tests/fuzz/fuzz_deser
