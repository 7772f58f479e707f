//go:build !linux

package supervise

import "syscall"

// setDeathSignal does nothing where there is no parent-death signal: the
// watchdog alone stops CMD's group when the supervisor dies.
func setDeathSignal(*syscall.SysProcAttr) {}
