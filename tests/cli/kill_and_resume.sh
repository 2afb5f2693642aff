#!/bin/bash
# A run killed mid-training resumes from its last checkpoint and ends with
# the same figures as a run never interrupted: run once whole; run again,
# SIGKILL it once a checkpoint is written (atomically, after the records it
# covers), resume it with --resume; compare the summaries' KEYS.
#   kill_and_resume.sh PLN DIR FAMILY KEYS [run options...]   (KEYS: comma-separated)
set -euo pipefail
pln="$1"
family="$3"
keys="$4"
shift 4
dir="$2/${family}_kill_and_resume"
rm -rf "$dir"
mkdir -p "$dir"
run=("$pln" "$family" --preset smoke --threads 1 "$@")

"${run[@]}" --out "$dir/whole" > "$dir/whole.log" 2>&1

setsid "${run[@]}" --out "$dir/killed" > "$dir/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
  [ -f "$dir/killed/checkpoint.safetensors" ] && break
  sleep 0.05
done
kill -KILL -- "-$pid" 2> /dev/null || true
wait "$pid" 2> /dev/null || true
[ -f "$dir/killed/checkpoint.safetensors" ] || { echo "no checkpoint before the kill"; cat "$dir/killed.log"; exit 1; }
[ ! -f "$dir/killed/summary.json" ] || { echo "the run finished before it could be killed"; exit 1; }

"${run[@]}" --out "$dir/killed" --resume > "$dir/resumed.log" 2>&1
grep -E "resumed from .*checkpoint.safetensors after step [0-9]+" "$dir/resumed.log"
/usr/bin/python3 - "$dir/whole/summary.json" "$dir/killed/summary.json" "$keys" <<'PY'
import json, sys
whole, resumed = (json.load(open(p)) for p in sys.argv[1:3])
keys = sys.argv[3].split(",")
diff = [f"{k}: {whole[k]} vs {resumed[k]}" for k in keys if whole[k] != resumed[k]]
if diff:
    sys.exit("resumed run differs: " + "; ".join(diff))
print("resumed run equals the uninterrupted run:", ", ".join(f"{k}={whole[k]}" for k in keys))
PY
