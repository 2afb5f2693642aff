#!/bin/bash
# An interrupted grid resumes without losing or repeating a record: kill a
# smoke grid (and its worker) once its first cell has finished, check what is
# on disk is whole, rerun it, and check every cell appears exactly once and the
# finished cell was not run again.
set -euo pipefail
pln="$1"
dir="$2/grid_resume"
rm -rf "$dir"
mkdir -p "$dir"

setsid "$pln" grid pinn --preset smoke --out "$dir" --jobs 1 --threads 1 > "$dir/first.log" 2>&1 &
grid=$!
for _ in $(seq 600); do
  compgen -G "$dir/0_*/summary.json" > /dev/null && break
  sleep 0.05
done
kill -KILL -- "-$grid" 2> /dev/null || true
wait "$grid" 2> /dev/null || true
first_cell=$(ls -d "$dir"/0_*)
[ -f "$first_cell/summary.json" ] || { echo "first cell never finished"; cat "$dir/first.log"; exit 1; }
stamp=$(stat -c %Y.%N "$first_cell/summary.json")
for f in "$dir"/records.csv "$dir"/*/summary.json; do
  [ -f "$f" ] || continue
  case "$f" in
    *.csv) head -n 1 "$f" | grep -q '^cell,' || { echo "torn $f"; exit 1; } ;;
    *.json) /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" || { echo "torn $f"; exit 1; } ;;
  esac
done

"$pln" grid pinn --preset smoke --out "$dir" --jobs 2 --threads 1 > "$dir/second.log"
grep -q "2 cells, 1 done, 1 to run\|2 cells, 2 done, 0 to run" "$dir/second.log" || { cat "$dir/second.log"; exit 1; }
[ "$(stat -c %Y.%N "$first_cell/summary.json")" = "$stamp" ] || { echo "the finished cell ran again"; exit 1; }
rows=$(tail -n +2 "$dir/records.csv" | cut -d, -f1 | sort)
[ "$(echo "$rows" | wc -l)" = 2 ] || { echo "expected 2 records, got:"; cat "$dir/records.csv"; exit 1; }
[ "$(echo "$rows" | uniq | wc -l)" = 2 ] || { echo "duplicate records:"; cat "$dir/records.csv"; exit 1; }
echo "grid resumed: 2 records, no duplicates"
