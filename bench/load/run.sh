#!/usr/bin/env bash
# Requests/s of enter and position through the local runner (HTTP → payload
# 2.0 event → handler → a real redis-server), measured with wrk on loopback.
#   bench/load/run.sh [connections...]    (default: 16 64)
set -euo pipefail
cd "$(dirname "$0")/../.."
conns=("${@:-16 64}"); conns=(${conns[*]})
command -v wrk >/dev/null || { echo "wrk is missing: \`make load\` installs it" >&2; exit 1; }
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port() { shuf -i 20000-60000 -n 1; }
rport=$(port); aport=$(port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
go build -o "$work/local" ./cmd/local
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.1; done
# ADMIT_RATE_PER_SEC=1: the line stays (almost) whole while we measure.
REDIS_URL=redis://127.0.0.1:$rport ADDR=127.0.0.1:$aport QUEUE_CAPACITY=100000000 ADMIT_RATE_PER_SEC=1 "$work/local" 2>"$work/local.log" &
until curl -sf "http://127.0.0.1:$aport/healthz" >/dev/null; do sleep 0.1; done
go run ./bench/load/fill -url "http://127.0.0.1:$aport" -users 100000
echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*'), $(nproc) cores, $(redis-cli -p "$rport" zcard 'wr:{default}:line') users waiting"
for c in "${conns[@]}"; do
  for route in position enter; do
    out=$(wrk -t2 -c"$c" -d10s --latency -s "bench/load/$route.lua" "http://127.0.0.1:$aport")
    printf '%-8s c=%-3s %8s req/s  p50 %-8s p99 %s\n' "$route" "$c" \
      "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")"
    grep -q 'Non-2xx' <<<"$out" && { echo "non-2xx answers:"; echo "$out"; exit 1; }
  done
done
