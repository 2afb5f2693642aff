#!/bin/bash
# Records name the code that ran: the revision `pln --version` prints (the one
# config.json records) is taken when pln is built, so it needs no git at run
# time and does not follow commits made after the build.
#   built_revision.sh PLN
set -euo pipefail
pln="$1"
version=$("$pln" --version)
if [ "$version" = "pln unknown" ]; then
  echo "pln was built outside a git checkout: no revision to compare"
  exit 77
fi
without_git=$(env PATH=/nonexistent "$pln" --version)
if [ "$version" != "$without_git" ]; then
  echo "pln --version gave '$version', and '$without_git' without git on PATH: the revision is read when pln runs"
  exit 1
fi
echo "revision taken at build time: $version"
