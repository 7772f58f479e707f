#!/usr/bin/env bash
# Soaks `baton serve` at full contention and reports its data dir's size
# over time: 8 sessions contending for one lock (`baton bench --workload
# contended`) for DURATION (default 30m), the size sampled every INTERVAL
# (default 60s). Pass serve flags after the two, e.g.
#   scripts/serve-soak.sh 30m 60s --compaction-interval 0
# to see the growth without maintenance. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-30m}
interval=${2:-60}
interval=${interval%s}
shift 2 2>/dev/null || shift $#
tmp=$(mktemp -d)
trap 'kill $serve_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/baton" ./cmd/baton
"$tmp/baton" serve --data-dir "$tmp/data" --listen 127.0.0.1:0 "$@" > "$tmp/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 300); do
  grep -q 'Ctrl-C stops' "$tmp/serve.log" && break
  sleep 0.1
done
addr=$(sed -n 's/.*etcd serving on \([0-9.:]*\) .*/\1/p' "$tmp/serve.log")
test -n "$addr" || { cat "$tmp/serve.log"; exit 1; }
echo "# baton serve $* at $addr, soak $duration, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/baton" bench --store "etcd://$addr" --workload contended --clients 8 --duration "$duration" > "$tmp/bench.out" 2>&1 &
bench_pid=$!
start=$(date +%s)
printf '%8s %12s %12s %12s\n' minutes data-dir-KiB db-KiB wal-KiB
while kill -0 $bench_pid 2>/dev/null; do
  now=$(date +%s)
  printf '%8.1f %12s %12s %12s\n' "$(echo "($now-$start)/60" | bc -l)" \
    "$(du -sk "$tmp/data" | cut -f1)" \
    "$(du -sk "$tmp/data/member/snap/db" 2>/dev/null | cut -f1)" \
    "$(du -sk "$tmp/data/member/wal" 2>/dev/null | cut -f1)"
  for _ in $(seq "$interval"); do kill -0 $bench_pid 2>/dev/null || break; sleep 1; done
done
wait $bench_pid || { echo "bench failed:"; cat "$tmp/bench.out"; exit 1; }
printf '%8.1f %12s %12s %12s  (end)\n' "$(echo "($(date +%s)-$start)/60" | bc -l)" \
  "$(du -sk "$tmp/data" | cut -f1)" "$(du -sk "$tmp/data/member/snap/db" | cut -f1)" "$(du -sk "$tmp/data/member/wal" | cut -f1)"
cat "$tmp/bench.out"
