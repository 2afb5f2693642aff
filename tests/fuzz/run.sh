#!/usr/bin/env bash
# Runs each fuzz target for a bounded time on seeds taken from the tests' own
# files: the shipped records (CSV and JSON), the documentation (table
# markers), the values the tests pass to --set, and the checkpoint of a smoke
# run made with PLN (the Release `pln`). A finding stops the run with the
# crashing input saved under the work directory, to become a regression test.
#
# usage: tests/fuzz/run.sh FUZZ_BUILD_DIR PLN WORKDIR SECONDS_PER_TARGET
set -euo pipefail
build=$1 pln=$2 work=$3 seconds=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"/seeds/{checkpoint,json_record,csv_record,set_value,doc_markers} "$work"/artifacts \
         "$work"/corpus-{checkpoint,json_record,csv_record,set_value,doc_markers}

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
# A smoke run's checkpoint, kept from its last save.
"$pln" fourier --preset smoke --threads 1 --set steps=40 checkpoint_every=20 --out "$work/run" > "$work/run.log" 2>&1
cp "$work/run/checkpoint.safetensors" "$work/seeds/checkpoint/"

status=0
for target in checkpoint json_record csv_record set_value doc_markers; do
  log="$work/$target.log"
  # -rss_limit_mb: a reader that allocates past its limits is a finding too.
  if ! "$build/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=262144 -timeout=20 \
       -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" "$work/corpus-$target" \
       "$work/seeds/$target" > "$log" 2>&1 < /dev/null; then
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
