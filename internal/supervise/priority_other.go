//go:build !linux

package supervise

import "golang.org/x/sys/unix"

// watchdogNice is the watchdog's nice value, where it may lower its own.
const watchdogNice = -10

// raisePriority lowers the process's nice value, if allowed.
func raisePriority() { _ = unix.Setpriority(unix.PRIO_PROCESS, 0, watchdogNice) }
