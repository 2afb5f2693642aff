#!/bin/bash
# Two grids on one directory share its cells: each cell runs once, in one of
# them, and records.csv holds every cell once. A run directory takes one
# process at a time: a second worker on it exits with status 75, naming the
# first.
set -euo pipefail
pln="$1"
dir="$2/two_grids"
rm -rf "$dir"
mkdir -p "$dir"

# Two workers on one run directory.
run="$dir/one_run"
"$pln" pinn --preset smoke --set steps=1000000 --threads 1 --out "$run" > "$dir/first_worker.log" 2>&1 &
first=$!
for _ in $(seq 600); do
  [ -f "$run/running.json" ] && break
  sleep 0.05
done
[ -f "$run/running.json" ] || { echo "the first worker never started"; cat "$dir/first_worker.log"; exit 1; }
status=0
"$pln" pinn --preset smoke --threads 1 --out "$run" > "$dir/second_worker.log" 2>&1 || status=$?
kill "$first"
wait "$first" 2> /dev/null || true
[ "$status" = 75 ] || { echo "second worker: exit $status, expected 75"; cat "$dir/second_worker.log"; exit 1; }
grep -q "is being run by another process (on .*, pid $first, since" "$dir/second_worker.log" \
  || { echo "the second worker did not name the first:"; cat "$dir/second_worker.log"; exit 1; }
[ ! -f "$run/summary.json" ] || { echo "a summary appeared in a directory whose run was stopped"; exit 1; }

# Two grids started at once on one directory.
grid="$dir/grid"
"$pln" grid pinn --preset smoke --out "$grid" --jobs 1 --threads 1 > "$dir/grid_a.log" 2>&1 &
a=$!
"$pln" grid pinn --preset smoke --out "$grid" --jobs 1 --threads 1 > "$dir/grid_b.log" 2>&1 &
b=$!
status=0
wait "$a" || status=$?
wait "$b" || status=$?
[ "$status" = 0 ] || { echo "a grid failed"; cat "$dir/grid_a.log" "$dir/grid_b.log"; exit 1; }
cells=$(ls -d "$grid"/*/ | wc -l)
[ "$cells" = 2 ] || { echo "expected 2 cell directories, got $cells"; exit 1; }
for cell in "$grid"/*/; do
  id=$(basename "$cell")
  [ -f "$cell/summary.json" ] || { echo "$id has no summary"; cat "$dir/grid_a.log" "$dir/grid_b.log"; exit 1; }
  runs=$(cat "$dir/grid_a.log" "$dir/grid_b.log" | grep -c "\] $id done$" || true)
  [ "$runs" = 1 ] || { echo "$id ran $runs times:"; cat "$dir/grid_a.log" "$dir/grid_b.log"; exit 1; }
done
rows=$(tail -n +2 "$grid/records.csv" | cut -d, -f1 | sort)
[ "$(echo "$rows" | wc -l)" = 2 ] && [ "$(echo "$rows" | uniq | wc -l)" = 2 ] \
  || { echo "records.csv does not hold each cell once:"; cat "$grid/records.csv"; exit 1; }
# Where both grids began before either finished a cell, one left a cell to the other.
if [ "$(cat "$dir/grid_a.log" "$dir/grid_b.log" | grep -c '2 cells, 0 done, 2 to run')" = 2 ]; then
  grep -q "another process" "$dir/grid_a.log" "$dir/grid_b.log" \
    || { echo "neither grid left a cell to the other:"; cat "$dir/grid_a.log" "$dir/grid_b.log"; exit 1; }
fi
echo "two grids: each cell ran once"
