#!/bin/bash
# Re-running shipped cells gives their shipped metrics bit for bit: four cells
# of results/fourier-paper (the cheapest PLN(4), LN and ReLU cells, and the
# cheapest PLN(8) cell of 16 or more groups, which the AVX-512 kernels for
# groups of 8 take forward and backward), with
# the threads the grid ran with. LN (one group of all the layer's features)
# runs on the large-group kernels, which since commit 5fe6a8d sum in blocks
# widened to double where the records' run summed in sequence: its metrics
# must agree to 1e-5 relative, not to the bit. Skipped (exit 77), saying why, on a machine or
# build whose kernels or BLAS differ from the ones that made the records.
set -euo pipefail
pln="$1"
results="$2/results/fourier-paper"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
"$pln" fourier --preset smoke --threads 1 --out "$work/probe" > /dev/null
reason=$("$python" - "$results/provenance.json" "$work/probe/config.json" <<'PY'
import json, sys
shipped, here = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for key in ("kernels", "blas", "torch"):
    if shipped[key] != here[key]:
        print(f"{key} here is {here[key]!r}, the records were made with {shipped[key]!r}")
        break
PY
)
if [ -n "$reason" ]; then
  echo "skipped: $reason; bit-for-bit equality holds only on the same kind of machine and build"
  exit 77
fi
threads=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['threads'])" "$results/provenance.json")
cells=$("$python" - "$results/records.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
picked = {}
for row in sorted(rows, key=lambda r: (int(r["width"]), int(r["K"]))):
    if row["model"] != "PLN(8)" or int(row["width"]) >= 16 * 8:
        picked.setdefault(row["model"], row["cell"])
print(" ".join(picked[m] for m in ("PLN(4)", "PLN(8)", "LN", "ReLU")))
PY
)
for cell in $cells; do
  sets=$("$python" - "$results/grid.json" "$cell" <<'PY'
import json, sys
cell = next(c for c in json.load(open(sys.argv[1]))["cells"] if c["id"] == sys.argv[2])
print(" ".join("--set " + s for s in cell["set"]))
PY
)
  # shellcheck disable=SC2086
  "$pln" fourier --preset paper $sets --threads "$threads" --out "$work/$cell" > /dev/null
  "$python" - "$results/records.csv" "$cell" "$work/$cell/summary.json" <<'PY'
import csv, json, sys
row = next(r for r in csv.DictReader(open(sys.argv[1])) if r["cell"] == sys.argv[2])
summary = json.load(open(sys.argv[3]))
close = row["model"] == "LN"
for metric in ("rel_l2", "max_err", "final_loss"):
    recorded, now = float(row[metric]), summary[metric]
    if now != recorded and not (close and abs(now - recorded) <= 1e-5 * abs(recorded)):
        sys.exit(f"{sys.argv[2]}: {metric} is {now!r} now, {row[metric]} in the records")
print(f"{sys.argv[2]}: rel_l2, max_err and final_loss equal the records "
      + ("to 1e-5 relative" if close else "bit for bit"))
PY
done
