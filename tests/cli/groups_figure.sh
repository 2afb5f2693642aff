#!/usr/bin/env bash
# docs/performance.md's group-size figure is what bench/plot_groups.sh draws
# from the benchmark log it names: the block between
#   <!-- figure bench/results/NAME.csv threads=N -->  and  <!-- end figure -->
# (inside a code fence) must equal the script's output for that file.
set -euo pipefail
root=$1
doc="$root/docs/performance.md"
marker=$(grep -m1 -o '<!-- figure [^ ]*\.csv threads=[0-9]* -->' "$doc") || {
  echo "no '<!-- figure FILE.csv threads=N -->' block in $doc"; exit 1; }
csv=$(echo "$marker" | sed -E 's/<!-- figure ([^ ]*) threads=([0-9]*) -->/\1/')
threads=$(echo "$marker" | sed -E 's/<!-- figure ([^ ]*) threads=([0-9]*) -->/\2/')
expected=$(mktemp)
shown=$(mktemp)
trap 'rm -f "$expected" "$shown"' EXIT
"$root/bench/plot_groups.sh" "$root/$csv" --threads "$threads" > "$expected"
# The block's lines less the marker, the fence and the end marker.
awk -v m="$marker" '$0 == m {on = 1; next} /<!-- end figure -->/ {on = 0} on && !/^```/' "$doc" > "$shown"
if ! diff -u "$expected" "$shown"; then
  echo "docs/performance.md's figure differs from bench/plot_groups.sh $csv --threads $threads (above)"
  exit 1
fi
echo "the figure in docs/performance.md is bench/plot_groups.sh's drawing of $csv"
