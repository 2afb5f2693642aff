#!/usr/bin/env bash
# expect_error.sh PATTERN COMMAND...: COMMAND must fail (exit status not 0,
# and not a crash by a signal) and print a line matching the extended regex PATTERN.
set -uo pipefail
pattern=$1
shift
output=$("$@" 2>&1)
code=$?
if [[ $code == 0 ]]; then echo "FAIL: exit 0 from: $*"; echo "$output"; exit 1; fi
if (( code > 128 )); then echo "FAIL: killed by signal $((code - 128)): $*"; echo "$output"; exit 1; fi
if ! grep -Eq -- "$pattern" <<<"$output"; then echo "FAIL: no line matches '$pattern':"; echo "$output"; exit 1; fi
echo "failed as expected (exit $code): $(grep -E -- "$pattern" <<<"$output" | head -1)"
