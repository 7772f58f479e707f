#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test against the
# real engines: go vet, staticcheck and go test -race over every module of
# go.work, each built from its own go.mod (GOWORK=off), as a user of that
# module gets it. With CI set, a missing engine fails the run.
#
# The tests run in two lanes beside each other and beside the checks
# (tidy, vet, staticcheck, the build checks, run at a lower priority):
# the command line's module in one; the etcd tests (./tests), the
# library's and the small modules' in the other. The tests with margins
# to keep under a given load then run alone: cmd/baton's TestLoaded (it
# brings its own CPU hogs) and the fault suite (./reliability).
#
# scripts/test.sh --short is the inner loop: go vet and go test -race
# -short over the library's module, that is the unit tests, the
# conformance suite on the memory store and one real store, ZooKeeper
# (its conformance suites, plain and over TLS). Not Redis, PostgreSQL, nor the
# interop tests (Curator's and kazoo's processes), nor the other modules
# (the CLI, etcd, the fault suite), nor setup, staticcheck and the build
# checks.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
  echo
  echo "usage: scripts/test.sh [--short]"
}
short=""
case "${1:-}" in
"") ;;
--short) short=1 ;;
-h | --help)
  usage
  exit 0
  ;;
*)
  echo "test: unknown argument $1 (scripts/test.sh --help)" >&2
  echo "usage: scripts/test.sh [--short]" >&2
  exit 2
  ;;
esac

# Each phase prints when it starts and how long it took, counted from the
# start of the run ("== [03:12] ./cmd/baton: go test -race: took 5m01s"),
# and the run ends with every phase's time, the slowest first.
start=$SECONDS
phase="" phase_start=0 times=()
clock() { printf '%02d:%02d' $((($1 - start) / 60)) $((($1 - start) % 60)); }
took() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
record() { # record SECONDS NAME [NOTE]
  times+=("$(printf '%6d' "$1") $(took "$1")  $2${3:+ ($3)}")
}
end_phase() {
  if [ -n "$phase" ]; then
    local d=$((SECONDS - phase_start))
    echo "== [$(clock $SECONDS)] $phase: took $(took $d)${1:+ ($1)}"
    record $d "$phase" "${1:-}"
    phase=""
  fi
  report
}
begin() {
  end_phase
  phase=$1 phase_start=$SECONDS
  echo "== [$(clock $SECONDS)] $phase"
}

# Background phases: bg NAME CMD... starts one with its output in a
# file; each is reported, its output and time, once it has ended (when a
# phase ends, or in wait_all). Job control gives each its own process
# group, so that an interrupt stops it with all it started. A background
# phase that fails fails the run, once everything else has run.
set -m
logs=$(mktemp -d)
declare -A bg_name=() bg_log=() bg_start=()
bg_seq=0 failed=()
bg() {
  local name=$1 log="$logs/$((bg_seq++))"
  shift
  (
    # Its status and end time; SECONDS runs on in a subshell.
    if "$@"; then status=0; else status=$?; fi
    echo "$status $SECONDS" >"$log.done"
  ) >"$log" 2>&1 </dev/null &
  bg_name[$!]=$name bg_log[$!]=$log bg_start[$!]=$SECONDS
  echo "== [$(clock $SECONDS)] $name: started, in the background"
}
report() {
  local pid status end note
  for pid in "${!bg_name[@]}"; do
    if [ -e "${bg_log[$pid]}.done" ]; then
      wait "$pid" 2>/dev/null || true
      read -r status end <"${bg_log[$pid]}.done"
    elif ! kill -0 "$pid" 2>/dev/null; then
      status="killed" end=$SECONDS # interrupted
    else
      continue
    fi
    note=""
    if [ "$status" != 0 ]; then
      note="failed, exit $status"
      failed+=("${bg_name[$pid]}")
    fi
    echo "== [$(clock "$end")] ${bg_name[$pid]}: took $(took $((end - bg_start[$pid])))${note:+ ($note)}"
    cat "${bg_log[$pid]}"
    record $((end - bg_start[$pid])) "${bg_name[$pid]}" "$note"
    unset "bg_name[$pid]" "bg_log[$pid]" "bg_start[$pid]"
  done
}
wait_all() {
  while ((${#bg_name[@]})); do
    wait -n 2>/dev/null || true
    report
  done
}
stop_all() {
  for pid in "${!bg_name[@]}"; do kill -INT -- "-$pid" 2>/dev/null || true; done
}
summary() {
  local status=$?
  end_phase "$([ $status = 0 ] || echo "failed, exit $status")"
  # A check that failed leaves the tests running: they are reported too.
  # An interrupt (the foreground command got it, and exits 130) stops
  # them.
  [ $status -lt 128 ] || stop_all
  wait_all
  rm -rf "$logs"
  echo "== phases, slowest first:"
  printf '%s\n' "${times[@]}" | sort -rn | cut -c8-
  if ((${#failed[@]})); then
    printf '== failed: %s\n' "${failed[@]}"
    [ $status != 0 ] || status=1
  fi
  echo "== total $(took $((SECONDS - start)))"
  exit $status
}
trap summary EXIT
trap 'stop_all; exit 130' INT TERM

# go test runs a few vet checks on every package it tests; go vet runs
# them all, so the tests skip them (-vet=off). Most tests spend their
# time waiting (leases running out, servers restarting, a CLI process
# starting): they run beside each other up to -parallel 4, not GOMAXPROCS
# (2 on a 2-core machine). Not more: some of cmd/baton's start twenty
# baton processes, and with eight such tests at once a 2-core machine ran
# at a load of 50 and short holds went into jeopardy.
testflags="-count=1 -vet=off -parallel 4"

if [ -n "$short" ]; then
  export GOWORK=off
  begin ".: go vet"
  go vet ./...
  begin ".: go test -race -short (the unit tests, memory, ZooKeeper)"
  go test -race -short $testflags -skip '^TestInterop' -timeout 10m $(go list ./... | grep -Ev '/(redis|postgres|internal/pgtest)$')
  exit 0
fi

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
# The two lanes of tests (see below) name every module but the fault
# suite's, which runs alone at the end.
# The command line's lane ends with the redsync interop module, which
# evens the two lanes out (the other ended 50 s later on a cold run).
cli_lane="./cmd/baton ./interop/redsync"
lib_lane="./tests . ./etcd/embedded ./bench ./internal/etcdtest"
lanes="$cli_lane $lib_lane"
for mod in $modules; do
  case " $lanes ./reliability " in
  *" $mod "*) ;;
  *)
    echo "test: module $mod is in no lane of scripts/test.sh"
    exit 1
    ;;
  esac
done

export GOWORK=off

# Each module's tests are compiled first, in the foreground, one module
# after the other (go list -export compiles without linking): go
# commands running at once would each compile the packages the modules
# share (the etcd server, gRPC) on an empty build cache. The packages of
# the binaries the tests build themselves (baton, with and without the
# race detector, and the test etcd server) are compiled first for the same
# reason; not linked, as the tests link them again. On a warm cache this
# takes seconds.
begin "tests: compile (baton, the test etcd server, every module's tests)"
(cd cmd/baton && go list -export -deps . >/dev/null && go list -race -export -deps . >/dev/null)
(cd internal/etcdtest/etcdserver && go list -export -deps . >/dev/null)
for mod in $lanes; do
  (cd "$mod" && go list -race -test -export -deps ./... >/dev/null)
done
(cd reliability && go list -test -export -deps ./... >/dev/null)
end_phase

# mod_test MOD [FLAGS...]: go test -race over a module.
mod_test() {
  local mod=$1
  shift
  echo "== $mod: go test -race $*"
  (cd "$mod" && go test -race $testflags -timeout 25m "$@" ./...)
}

# The two lanes, each about a core's worth of work: the command line's
# tests, which mostly wait for the processes they start; and the etcd
# tests, whose three conformance suites (a server, one over TLS, a cluster
# of three) keep a core busy for minutes, followed by the library's and
# the small modules'. Not more lanes: with the etcd suites, the library's
# and the command line's tests in three lanes at once (and other work on
# the machine), one-second sessions were lost in all three. A lane goes
# on after a module that failed, and fails at its end.
lane() {
  local mod status=0
  for mod in "$@"; do mod_test "$mod" -skip "$alone_tests" || status=1; done
  return $status
}
# Tests that measure a bound or count that a CPU-heavy neighbour skews run
# with the alone phase at the end instead: the requests of a cluster whose
# leader is cut off (bound 5 s; 9.3 s once beside the other lane) and the
# Redis floors' requests per acquisition (28.4 against 27.5 once; the
# relay floor's 1.14 against 1.1 at a load of 20).
alone_tests='^(TestClusterRequestsLeaveACutLeader|TestRedisRelay|TestRedisLineFloor|TestRedisDeadlineFloor|TestRedisBlockingFloor|TestRedlockLineFloor)$'
# They run by package at the end (bounds_alone, ./internal/bench and
# ./tests/etcd): every one of them must be in those, or the lanes would
# skip it and nothing would run it.
alone_names=${alone_tests#^(}
alone_names=${alone_names%)\$}
alone_dirs=$({ grep -rlE "^func ($alone_names)\(" --include='*_test.go' . || true; } | xargs -r -n1 dirname | sort -u | tr '\n' ' ')
if [ "$alone_dirs" != "./internal/bench ./tests/etcd " ]; then
  echo "test: the tests run alone are in $alone_dirs; bounds_alone runs ./internal/bench and ./tests/etcd"
  exit 1
fi
# The command line's tests three at a time (-parallel 3, the last flag
# wins): each starts baton processes and servers of its own, and most of
# their time is spent waiting for them. Its tests that count what a
# neighbour could delay run alone at the end: TestLoaded (it brings its
# own CPU hogs) and TestPrometheusScrapesBaton (at four at a time beside
# the other lane an elector of it went unscraped for 30 s once).
cli_alone='^(TestLoaded|TestPrometheusScrapesBaton)$'
cli_run() {
  local status=0
  mod_test ./cmd/baton -skip "$cli_alone" -parallel 3 || status=1
  mod_test ./interop/redsync -skip "$alone_tests" || status=1
  return $status
}
bg "$cli_lane: go test -race (but $cli_alone)" cli_run
bg "$lib_lane: go test -race" lane $lib_lane

# The checks, while the tests run, at a lower priority: compiling takes
# what CPU the tests leave, and does not starve their servers and
# clients.
low="nice -n 10"

# staticcheck, pinned; go run builds it once and caches it.
staticcheck="go run honnef.co/go/tools/cmd/staticcheck@v0.8.2"

for mod in $modules; do
  begin "$mod: go mod tidy -diff, go vet, staticcheck"
  (cd "$mod" && $low go mod tidy -diff && $low go vet ./... && $low $staticcheck ./...)
done

# The command line and the library's packages (not its Linux-only test
# servers in internal/) build for macOS and FreeBSD too: checked by
# type-checking them, with all they import, for each system from source
# (cmd/baton/internal/crosscheck). That catches what a pure-Go cross build
# catches (an API a system lacks, a file a build tag leaves out) in
# seconds, where compiling every dependency for each system took 5 minutes
# on an empty build cache (the etcd server among them). Nothing is
# linked; baton has no assembly, cgo nor linknames that only a build
# would check.
begin "GOOS=darwin,freebsd: type-check (library, ./cmd/baton)"
libpkgs=$(go list ./... | grep -v '/internal/')
(cd cmd/baton && $low go run ./internal/crosscheck -goos darwin,freebsd . $libpkgs)

# The library's go directive is the lowest its dependencies allow (their
# own go directives are the floor), and the library builds, tests
# included, with that release of Go. go vet above already holds the code
# to that release: the type checker takes the language version from the
# go directive and vet's stdversion check flags any standard library API
# newer than it. So the library is vetted with the floor's own toolchain
# only when that is another minor release than the one running (go1.25.x
# under go1.26.x, say): within one minor release the language and the
# APIs are the same, and the old toolchain's download and a compile of
# every dependency with it took 5 minutes on an empty build cache.
begin "library: go directive, go vet with that release"
gover=$(go list -m -f '{{.GoVersion}}')
floor=$(go mod download -json | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' |
  xargs awk '/^go /{print $2; nextfile}' | sort -V | tail -1)
if [ "$gover" != "$floor" ]; then
  echo "test: go.mod says go $gover; the dependencies need go $floor: use that"
  exit 1
fi
running=$(go env GOVERSION)
minor() { echo "$1" | sed 's/^go//' | cut -d. -f1,2; }
if [ "$(minor "$gover")" = "$(minor "$running")" ]; then
  echo "go $gover: the running $running is the same minor release; go vet above checked it"
else
  echo "go $gover: go vet with that toolchain (running $running)"
  GOTOOLCHAIN="go$gover" $low go vet ./...
fi

# A user who imports one backend gets that store's client and nothing of
# the etcd server.
for pkg in zk etcd postgres; do
  begin "library: a module importing only baton/$pkg"
  scratch=$(mktemp -d)
  cat >"$scratch/go.mod" <<EOF
module example.com/user

go $gover

require github.com/batonhq/baton v0.0.0

replace github.com/batonhq/baton => $root
EOF
  printf 'package main\n\nimport _ "github.com/batonhq/baton/%s"\n\nfunc main() {}\n' "$pkg" >"$scratch/main.go"
  (cd "$scratch" && $low go mod tidy && $low go build -o /dev/null . && go list -m all >modules.txt)
  echo "$(wc -l <"$scratch/modules.txt") modules"
  if grep -q '^go.etcd.io/etcd/server/v3 ' "$scratch/modules.txt"; then
    echo "test: importing baton/$pkg brings in the etcd server"
    exit 1
  fi
  rm -rf "$scratch"
done
end_phase
wait_all

# Alone, one after the other, nothing else running: TestLoaded's margins
# are measured with its own CPU hogs, one per core plus one, and no more
# load; the fault suite's scenarios cut, pause and kill with TTLs of a
# second, and its margins are not measured beside a CPU-heavy neighbour
# (its scenarios that mostly wait on servers of their own run beside each
# other, -parallel 4: reliability/report.go's independent).
bg "./cmd/baton: go test -race -run TestLoaded (alone)" mod_test ./cmd/baton -run '^TestLoaded$'
wait_all
# pkg_test MOD PKG [FLAGS...]: go test -race over one package of a
# module: the bounds below live in three packages, and a go test over a
# whole module would start every other package's test binary for nothing.
pkg_test() {
  local mod=$1 pkg=$2
  shift 2
  echo "== $mod $pkg: go test -race $*"
  (cd "$mod" && go test -race $testflags -timeout 25m "$@" "$pkg")
}
bounds_alone() {
  local status=0
  pkg_test ./tests ./etcd -run "$alone_tests" || status=1
  pkg_test . ./internal/bench -run "$alone_tests" || status=1
  pkg_test ./cmd/baton . -run '^TestPrometheusScrapesBaton$' || status=1
  return $status
}
bg "./tests, . and ./cmd/baton: the bounds, floors and scrapes (alone)" bounds_alone
wait_all
# The fault suite cuts ZooKeeper connections hundreds of times. On each
# reconnect go-zookeeper v1.0.4 (the latest release) reads Conn.lastZxid
# in sendSetWatches while its recvLoop writes it, which the race detector
# reports; the suite runs without it, its scenarios one at a time as ever.
# Races in baton's own code are covered by every other module, ZooKeeper
# partition tests included.
bg "./reliability: go test (the fault suite, alone)" \
  bash -c "cd reliability && go test -count=1 -vet=off -parallel 4 -timeout 25m ./..."
wait_all
