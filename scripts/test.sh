#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test against the
# real engines: go vet, staticcheck and go test -race over every module of go.work, each
# built from its own go.mod (GOWORK=off), as a user of that module gets it.
# With CI set, a missing engine fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase prints when it starts and how long it took, counted from the
# start of the run ("== [03:12] ./cmd/baton: go test -race"), and the run
# ends with every phase's time, the slowest first.
start=$SECONDS
phase="" phase_start=0 times=()
clock() { printf '%02d:%02d' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }
took() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
end_phase() {
  if [ -n "$phase" ]; then
    local d=$((SECONDS - phase_start))
    echo "== [$(clock)] $phase: took $(took $d)${1:+ ($1)}"
    times+=("$(printf '%6d' $d) $(took $d)  $phase${1:+ ($1)}")
    phase=""
  fi
}
begin() {
  end_phase
  phase=$1 phase_start=$SECONDS
  echo "== [$(clock)] $phase"
}
summary() {
  local status=$?
  end_phase "$([ $status = 0 ] || echo "failed, exit $status")"
  echo "== phases, slowest first:"
  printf '%s\n' "${times[@]}" | sort -rn | cut -c8-
  echo "== total $(took $((SECONDS - start)))"
}
trap summary EXIT

begin "setup: engines (apt-get) and Go modules (scripts/setup.sh)"
bash scripts/setup.sh

# Every go.mod in the tree is in go.work, so that nothing escapes the run.
root=$(pwd)
modules=$(go list -m -f '{{.Dir}}' | sed "s|^$root/*|./|; s|^\./$|.|" | sort)
found=$(find . -name go.mod -not -path './.git/*' | xargs -n1 dirname | sort)
if [ "$modules" != "$found" ]; then
  echo "go.work lists:"; echo "$modules"; echo "go.mod files:"; echo "$found"
  echo "test: every module must be in go.work"
  exit 1
fi

# staticcheck, pinned; go run builds it once and caches it.
staticcheck="go run honnef.co/go/tools/cmd/staticcheck@v0.8.2"

export GOWORK=off
for mod in $modules; do
  begin "$mod: go mod tidy -diff, go vet, staticcheck"
  (cd "$mod" && go mod tidy -diff && go vet ./... && $staticcheck ./...)
done

# The command line and the library's packages (not its Linux-only test
# servers in internal/) build for macOS and FreeBSD too: a build check
# only, no tests run there.
for os in darwin freebsd; do
  begin "GOOS=$os go build (library, ./cmd/baton)"
  GOOS=$os go build $(go list ./... | grep -v '/internal/')
  (cd cmd/baton && GOOS=$os go build -o /dev/null .)
done

# The library's go directive is the lowest its dependencies allow (their
# own go directives are the floor), and the library builds, tests
# included, with that very toolchain.
begin "library: go directive, go vet with that toolchain"
gover=$(go list -m -f '{{.GoVersion}}')
floor=$(go mod download -json | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' |
  xargs awk '/^go /{print $2; nextfile}' | sort -V | tail -1)
if [ "$gover" != "$floor" ]; then
  echo "test: go.mod says go $gover; the dependencies need go $floor: use that"
  exit 1
fi
echo "go $gover"
GOTOOLCHAIN="go$gover" go vet ./...

# A user who imports one backend gets that store's client and nothing of
# the etcd server.
for pkg in zk etcd; do
  begin "library: a module importing only baton/$pkg"
  scratch=$(mktemp -d)
  cat >"$scratch/go.mod" <<EOF
module example.com/user

go $gover

require github.com/batonhq/baton v0.0.0

replace github.com/batonhq/baton => $root
EOF
  printf 'package main\n\nimport _ "github.com/batonhq/baton/%s"\n\nfunc main() {}\n' "$pkg" >"$scratch/main.go"
  (cd "$scratch" && go mod tidy && go build -o /dev/null . && go list -m all >modules.txt)
  echo "$(wc -l <"$scratch/modules.txt") modules"
  if grep -q '^go.etcd.io/etcd/server/v3 ' "$scratch/modules.txt"; then
    echo "test: importing baton/$pkg brings in the etcd server"
    exit 1
  fi
  rm -rf "$scratch"
done

for mod in $modules; do
  case "$mod" in
  ./reliability)
    # The fault suite cuts ZooKeeper connections hundreds of times. On each
    # reconnect go-zookeeper v1.0.4 (the latest release) reads
    # Conn.lastZxid in sendSetWatches while its recvLoop writes it, which
    # the race detector reports; the suite runs without it. Races in
    # baton's own code are covered by every other module, ZooKeeper
    # partition tests included.
    begin "$mod: go test (fault suite)"
    (cd "$mod" && go test -count=1 -timeout 25m ./...)
    ;;
  *)
    begin "$mod: go test -race"
    (cd "$mod" && go test -race -count=1 -timeout 25m ./...)
    ;;
  esac
done
