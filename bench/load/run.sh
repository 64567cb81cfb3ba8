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
# wait_for WHAT CMD...: retry CMD for up to 30 s, failing with WHAT and the runner's log.
wait_for() {
  local what=$1; shift
  for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$what did not come up within 30 s" >&2; cat "$work/local.log" >&2 2>/dev/null; exit 1
}
rport=$(port); aport=$(port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
go build -o "$work/local" ./cmd/local
wait_for redis-server redis-cli -p "$rport" ping
# ADMIT_RATE_PER_SEC=1: the line stays (almost) whole while we measure.
# IP_RATE_PER_SEC=0: every request comes from the load generator's one IP;
# the per-identity buckets stay on (100,000 users, each polled rarely).
REDIS_URL=redis://127.0.0.1:$rport ADDR=127.0.0.1:$aport QUEUE_CAPACITY=100000000 ADMIT_RATE_PER_SEC=1 IP_RATE_PER_SEC=0 "$work/local" 2>"$work/local.log" &
wait_for "the local runner" curl -sf "http://127.0.0.1:$aport/healthz"
go run ./bench/load/fill -url "http://127.0.0.1:$aport" -users 100000
echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*'), $(nproc) cores, $(redis-cli -p "$rport" zcard 'wr:{default}:line') users waiting"
for c in "${conns[@]}"; do
  for route in position enter; do
    out=$(wrk -t2 -c"$c" -d10s --latency -s "bench/load/$route.lua" "http://127.0.0.1:$aport")
    printf '%-8s c=%-3s %8s req/s  p50 %-8s p99 %s\n' "$route" "$c" \
      "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")"
    if grep -q 'Non-2xx' <<<"$out"; then echo "non-2xx answers:"; echo "$out"; exit 1; fi
  done
done
