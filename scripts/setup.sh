#!/usr/bin/env bash
# Installs what baton's tests need on a Debian machine: the real engines
# (ZooKeeper, Redis, etcd's etcdctl and 3.4 server), Prometheus (the observability tests), the interop peers
# (Apache Curator, kazoo, ZooKeeper's own recipes) and the Go modules.
set -euo pipefail
cd "$(dirname "$0")/.."

# curl and iproute2 (ip): the docs' shell blocks (cmd/baton TestDocs).
pkgs=(zookeeper redis-server redis-sentinel etcd-client etcd-server postgresql pgbouncer libcurator-recipes-java python3-kazoo libzookeeper-java libnetty-java prometheus chromium curl iproute2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v java >/dev/null || { echo "setup: java is required (ZooKeeper, Curator)"; exit 1; }
# Each module's own requirements (GOWORK=off): in workspace mode a bare
# `go mod download` would also fetch redsync's test-only dependencies,
# which the module proxy refuses.
for mod in $(find . -name go.mod -not -path './.git/*' | xargs -n1 dirname); do
  (cd "$mod" && GOWORK=off go mod download)
done
# The README's `go run ./cmd/baton` and `go install ./cmd/baton` load the
# workspace (go.work), whose module graph wants a few go.mod files that no
# module alone does; TestDocs runs them offline.
go list -deps ./cmd/baton >/dev/null
