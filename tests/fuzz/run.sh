#!/usr/bin/env bash
# Runs each fuzz target for a bounded time on seeds taken from the tests' own
# files: the shipped records (CSV and JSON), the documentation (table
# markers), the values the tests pass to --set, and the checkpoints of smoke
# runs made with PLN (the Release `pln`), whose training states seed the
# training state's reader. The JSON and checkpoint targets take a dictionary
# of their formats' tokens and pln's keys (json.dict, safetensors.dict). A finding stops the run with the
# crashing input saved under the work directory, to become a regression test.
#
# usage: tests/fuzz/run.sh FUZZ_BUILD_DIR PLN WORKDIR SECONDS_PER_TARGET
set -euo pipefail
build=$1 pln=$2 work=$3 seconds=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
targets="checkpoint training_state json_record csv_record set_value doc_markers"
for target in $targets; do mkdir -p "$work/seeds/$target" "$work/corpus-$target"; done
mkdir -p "$work"/artifacts

# The shipped records, each under 64 KiB (libFuzzer's inputs stay short).
n=0
for f in $(find "$root/results" -name '*.csv' -size -64k | sort | head -40); do cp "$f" "$work/seeds/csv_record/$((n++)).csv"; done
for f in $(find "$root/results" -name '*.json' -size -64k | sort | head -40); do cp "$f" "$work/seeds/json_record/$((n++)).json"; done
cp "$root/README.md" "$root"/docs/*.md "$work/seeds/doc_markers/"
# Values the tests set, and the forms a value takes.
i=0
for v in steps=40 lr=1e-3 lr=0.5 drop=0.1 affine=true affine=no norm=pls device=cuda:3 seed=-1 \
         steps=4611686018427387904 lr=1e400 lr=nan labels_file=/etc 'device=cpu'; do
  printf '%s' "$v" > "$work/seeds/set_value/$((i++))"
done
# Smoke runs' checkpoints, kept from their last save, and their training states.
for family in fourier pinn; do
  "$pln" $family --preset smoke --threads 1 --set steps=40 checkpoint_every=20 --out "$work/run-$family" \
    > "$work/run-$family.log" 2>&1
  cp "$work/run-$family/checkpoint.safetensors" "$work/seeds/checkpoint/$family.safetensors"
  python3 - "$work/run-$family/checkpoint.safetensors" > "$work/seeds/training_state/$family.json" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
sys.stdout.write(json.loads(data[8:8 + n])["__metadata__"]["state"])
PY
done

# One target a core at a time (FUZZ_JOBS, default the machine's cores): each
# is a process of its own, run for its full time.
fuzz() {
  local target=$1 log="$work/$1.log" dict=() rc=0
  case $target in
    checkpoint) dict=(-dict="$root/tests/fuzz/safetensors.dict") ;;
    training_state | json_record) dict=(-dict="$root/tests/fuzz/json.dict") ;;
  esac
  # -rss_limit_mb: a reader that allocates past its limits is a finding too.
  "$build/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=262144 -timeout=20 \
    -print_final_stats=1 "${dict[@]}" -artifact_prefix="$work/artifacts/$target-" "$work/corpus-$target" \
    "$work/seeds/$target" > "$log" 2>&1 < /dev/null || rc=$?
  echo "$rc" > "$work/$target.status"
}
jobs_at_once=${FUZZ_JOBS:-$(nproc)}
running=0
for target in $targets; do
  if [ "$running" -ge "$jobs_at_once" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz "$target" &
  running=$((running + 1))
done
wait

status=0
for target in $targets; do
  log="$work/$target.log"
  if [ "$(cat "$work/$target.status" 2>/dev/null)" != 0 ]; then
    echo "fuzz_$target: FINDING (see $log and $work/artifacts/)"
    tail -40 "$log"
    status=1
    continue
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz_$target: $runs executions in ${seconds} s, $cov, no finding"
done
exit $status
