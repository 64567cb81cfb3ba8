#!/usr/bin/env bash
# Requests/s of enter and position through the local runner (HTTP → payload
# 2.0 event → handler → a real redis-server), measured with wrk on loopback.
# Writes docs/bench/load-results.json and, from it, the table of README.md's
# "Measured" section (between its "load" markers: bench/load/table through
# cmd/fragment): nobody copies these figures by hand.
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
rport=$(port); offport=$(port); onport=$(port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
go build -o "$work/local" ./cmd/local
wait_for redis-server redis-cli -p "$rport" ping
# Two runners on one store and one line, measured in turns: the abuse
# limiter off (every rate 0) and on (the identity's bucket at its defaults;
# the address's raised, since every request comes from wrk's one address).
# ADMIT_RATE_PER_SEC=1: the line stays (almost) whole while we measure.
common=(REDIS_URL=redis://127.0.0.1:$rport QUEUE_CAPACITY=100000000 ADMIT_RATE_PER_SEC=1)
env "${common[@]}" ADDR=127.0.0.1:$offport CLIENT_RATE_PER_SEC=0 IP_RATE_PER_SEC=0 VISITOR_RATE_PER_SEC=0 "$work/local" 2>"$work/local.log" &
env "${common[@]}" ADDR=127.0.0.1:$onport IP_RATE_PER_SEC=1000000000 IP_BURST=1000000000 "$work/local" 2>>"$work/local.log" &
wait_for "the local runner (limiter off)" curl -sf "http://127.0.0.1:$offport/healthz"
wait_for "the local runner (limiter on)" curl -sf "http://127.0.0.1:$onport/healthz"
go run ./bench/load/fill -url "http://127.0.0.1:$offport" -users 100000
redis=$(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-); cores=$(nproc)
# The line's length: its queue and its sorted set (redisstore/line.lua).
users=$(( $(redis-cli -p "$rport" llen 'wr:{default}:queue') + $(redis-cli -p "$rport" zcard 'wr:{default}:line') ))
echo "redis-server $redis, $cores cores, $users users waiting"
threads=2; seconds=10
# ms VALUE: wrk's latency (690.00us, 4.20ms, 1.02s) in milliseconds.
ms() { awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u); f = (u == "us") ? 0.001 : (u == "s") ? 1000 : 1; printf "%.4g", n * f }'; }
json_rows=()
for c in "${conns[@]}"; do
  for route in position enter; do
    for limiter in off on; do
      aport=$([ "$limiter" = on ] && echo "$onport" || echo "$offport")
      out=$(wrk -t$threads -c"$c" -d${seconds}s --latency -s "bench/load/$route.lua" "http://127.0.0.1:$aport")
      if grep -q 'Non-2xx' <<<"$out"; then echo "non-2xx answers (limiter $limiter):"; echo "$out"; exit 1; fi
      rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
      p50=$(ms "$(awk '$1=="50%" {print $2}' <<<"$out")"); p99=$(ms "$(awk '$1=="99%" {print $2}' <<<"$out")")
      path=$([ "$route" = enter ] && echo "POST /queue/enter" || echo "GET /queue/position")
      printf '%-8s c=%-3s limiter %-3s %8s req/s  p50 %s ms  p99 %s ms\n' "$route" "$c" "$limiter" "$rps" "$p50" "$p99"
      json_rows+=("$(printf '    {"route": "%s", "connections": %d, "limiter": "%s", "requestsPerSec": %s, "p50Ms": %s, "p99Ms": %s}' "$path" "$c" "$limiter" "$rps" "$p50" "$p99")")
    done
  done
done
when=$(date -u +%Y-%m-%d)
{
  printf '{\n  "when": "%s",\n  "machine": {"cores": %d, "redis": "%s"},\n' "$when" "$cores" "$redis"
  printf '  "usersWaiting": %d,\n  "wrk": {"threads": %d, "seconds": %d},\n  "rows": [\n' "$users" "$threads" "$seconds"
  (IFS=$'\n'; sed '$!s/$/,/' <<<"${json_rows[*]}")
  printf '  ]\n}\n'
} >docs/bench/load-results.json
# The table is rendered from the results file (bench/load/loadtable), so
# that a test can tell whether README.md's copy is current.
go run ./bench/load/table <docs/bench/load-results.json | go run ./cmd/fragment -file README.md -name load
echo "wrote docs/bench/load-results.json and README.md's load table"
