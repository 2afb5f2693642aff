#!/bin/bash
# A ViT run killed mid-training resumes from its last checkpoint and ends
# with the same figures as a run never interrupted: run once whole; run again,
# SIGKILL it once an epoch is checkpointed (the checkpoint is written
# atomically after the epoch's row), resume it with --resume; compare.
set -euo pipefail
pln="$1"
dir="$2/vit_resume"
rm -rf "$dir"
mkdir -p "$dir"
run=("$pln" vit --preset smoke --threads 1 --set epochs=5 n_train=2048)

"${run[@]}" --out "$dir/whole" > "$dir/whole.log" 2>&1

setsid "${run[@]}" --out "$dir/killed" > "$dir/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
  [ -f "$dir/killed/checkpoint.pt" ] && break
  sleep 0.05
done
kill -KILL -- "-$pid" 2> /dev/null || true
wait "$pid" 2> /dev/null || true
[ -f "$dir/killed/checkpoint.pt" ] || { echo "no checkpoint before the kill"; cat "$dir/killed.log"; exit 1; }
[ ! -f "$dir/killed/summary.json" ] || { echo "the run finished before it could be killed"; exit 1; }

"${run[@]}" --out "$dir/killed" --resume > "$dir/resumed.log" 2>&1
grep -E "resumed from .*checkpoint.pt after epoch [1-4] of 5" "$dir/resumed.log"
/usr/bin/python3 - "$dir/whole/summary.json" "$dir/killed/summary.json" <<'PY'
import json, sys
whole, resumed = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["test_top1", "test_top5", "best_test_top1", "train_acc", "final_loss", "epochs_done"]
diff = [f"{k}: {whole[k]} vs {resumed[k]}" for k in keys if whole[k] != resumed[k]]
if diff:
    sys.exit("resumed run differs: " + "; ".join(diff))
print("resumed run equals the uninterrupted run:", ", ".join(f"{k}={whole[k]}" for k in keys))
PY
