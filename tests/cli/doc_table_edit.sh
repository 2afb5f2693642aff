#!/bin/bash
# A documentation table edited by hand, so that it disagrees with its records,
# makes `pln docs` fail naming the file, the line and the difference; the
# untouched copy passes, and `pln docs --update` restores it.
set -euo pipefail
pln="$1"
source="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$source/README.md" "$source/docs" "$source/results" "$work/"
"$pln" docs --root "$work" > "$work/clean.log" || { cat "$work/clean.log"; echo "the untouched copy fails"; exit 1; }
# Change the first number of the first PLN row of a generated table in docs/fourier.md.
line=$(awk '/^<!-- table /{inside=1; next} inside && /^\| PLN/{print NR; exit}' "$work/docs/fourier.md")
[ -n "$line" ] || { echo "no generated table row in docs/fourier.md"; exit 1; }
sed -i "${line}s/| \([0-9]\)/| 9\1/" "$work/docs/fourier.md"
if "$pln" docs --root "$work" > "$work/edited.log" 2>&1; then
  echo "an edited table passed"; exit 1
fi
grep -q "docs/fourier.md:[0-9]*: the table from results/fourier-paper/[a-z_]*.md disagrees with its records (line $line:" "$work/edited.log" \
  || { cat "$work/edited.log"; echo "the failure does not name the edited line"; exit 1; }
"$pln" docs --root "$work" --update > /dev/null
cmp -s "$source/docs/fourier.md" "$work/docs/fourier.md" || { echo "--update did not restore the table"; exit 1; }
echo "an edited doc table fails the check at line $line; --update restores it"
