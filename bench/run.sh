#!/usr/bin/env bash
# Runs baton, the floors and the peer libraries on fresh local servers
# (ZooKeeper from Debian's jars, etcd embedded and Debian's 3.4, redis-server
# ×1 and ×5) and writes docs/PERFORMANCE.md, docs/bench-contenders.png and
# docs/bench-results.jsonl. Extra arguments go to the program (see -h).
# Takes about ten minutes on 2 cores; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")"
echo "load before: $(cat /proc/loadavg)" >&2
exec go run . -out ../docs "$@"
