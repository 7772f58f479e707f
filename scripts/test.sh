#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test against the
# real engines: go vet and go test -race over the module and the interop
# modules under interop/. With CI set, a missing engine fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 -timeout 25m ./...
for mod in $(find interop bench -name go.mod 2>/dev/null | xargs -r -n1 dirname); do
  echo "== go test ($mod)"
  (cd "$mod" && go mod download && go vet ./... && go test -race -count=1 -timeout 10m ./...)
done
