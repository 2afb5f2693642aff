#!/usr/bin/env bash
# docs/performance.md's group-size figure from the CSV of `pln_bench_groups
# --csv FILE`: time over a copy of the input against g, one line per layout
# and width (points: the rows of one layout and width are interleaved with
# others', which breaks lines), forward (top) and forward+backward (bottom),
# out of cache (the memory floor is what is compared), at the thread count given. Text by
# default, for the doc (`bench_groups_figure_in_docs` checks the doc's copy);
# `--png FILE` draws the same as an image.
#
#   bench/plot_groups.sh CSV [--threads N] [--png FILE]
set -euo pipefail
csv=${1:?usage: plot_groups.sh CSV [--threads N] [--png FILE]}
shift
threads=1
png=
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=${2:?--threads needs a count}; shift 2 ;;
    --png) png=${2:?--png needs a file}; shift 2 ;;
    *) echo "plot_groups.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -r "$csv" ] || { echo "plot_groups.sh: cannot read '$csv'" >&2; exit 2; }
# The paths go into gnuplot's commands inside single quotes.
for path in "$csv" "$png"; do
  case "$path" in *"'"*|*$'\n'*) echo "plot_groups.sh: a path with a quote or a newline: '$path'" >&2; exit 2 ;; esac
done
case "$threads" in ''|*[!0-9]*) echo "plot_groups.sh: --threads takes a whole number, got '$threads'" >&2; exit 2 ;; esac
if [ -n "$png" ]; then
  terminal="set terminal pngcairo size 900,900; set output '$png'"
else
  terminal="set terminal dumb size 100,60"
fi
# One panel: the time in CSV column $1 over the copy's (column 9), per layout
# and width. Every label is written here; the CSV gives only numbers
# (selected by its layout, width, cache and thread columns).
panel() {
  local column=$1 what=$2 command=plot
  echo "set title '$what, out of cache, $threads thread(s): time / a copy of the input'"
  echo "set ylabel '$what / copy'"
  for series in "nc 768 NC" "nc 4096 NC" "nc 5120 NC" "nchw 768 NCHW"; do
    set -- $series
    command+=" '$csv' skip 1 using (pick('$1', $2) ? \$3 : 1/0):(\$$column / \$9) with points title '$3, C = $2',"
  done
  echo "${command%,}"
}
gnuplot <<GP
$terminal
set datafile separator ','
set logscale x 2
set xrange [0.7:8192]
set key top left
set xlabel 'features per group g'
set multiplot layout 2,1
pick(layout, width) = (strcol(1) eq layout && \$2 == width && strcol(5) eq 'out' && \$6 == $threads)
$(panel 7 forward)
$(panel 10 forward+backward)
unset multiplot
GP
