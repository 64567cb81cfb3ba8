#!/usr/bin/env bash
# The sizes table of docs/e2e.md (make e2e-measure): every function's
# bootstrap and zip exactly as `make build` makes them, for each ARCH given;
# the first is the default build, the host's is marked.
#   FUNCTIONS="enter position …" e2e/sizes.sh ARCH...
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(go env GOARCH); default=$1
size() {
  local n; n=$(stat -c %s "$1")
  printf '%s MiB (%s B)' "$(awk -v n="$n" 'BEGIN { printf "%.2f", n / 1048576 }')" "$(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$n")"
}
printf '| function | build | bootstrap | zip |\n| --- | --- | --- | --- |\n'
for arch in "$@"; do
  make --no-print-directory build ARCH="$arch" >/dev/null
  label="linux/$arch"
  [ "$arch" = "$default" ] && label+=" (default)"
  [ "$arch" = "$host" ] && label+=" (host)"
  for f in $FUNCTIONS; do
    printf '| %s | %s | %s | %s |\n' "$f" "$label" "$(size "build/$f/bootstrap")" "$(size "build/$f.zip")"
  done
done
