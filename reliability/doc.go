// Package reliability is baton's fault suite: each scenario runs real
// engines on loopback, injects a fault (a partition through a TCP proxy, a
// paused or killed holder process, lost create replies, a killed ZooKeeper
// leader, killed or emptied Redis instances), checks mutual exclusion with
// fencing tokens, and reports runs, violations and recovery times.
//
// `go test ./reliability/` runs a bounded version (CI does). The full run,
// which also writes docs/RELIABILITY.md, is scripts/reliability.sh.
package reliability
