//go:build !linux

package main

import "syscall"

// setDeathSignal does nothing where there is no parent-death signal: the
// watchdog alone stops CMD's group when baton dies.
func setDeathSignal(*syscall.SysProcAttr) {}
