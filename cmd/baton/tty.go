package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// foregroundTTY returns the descriptor of f if f is a terminal whose
// foreground process group is ours: CMD, in a group of its own, must then
// be made the foreground group, or reading the terminal would stop it.
func foregroundTTY(f *os.File) (int, bool) {
	if f == nil {
		return 0, false
	}
	fd := int(f.Fd())
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return 0, false // not a terminal
	}
	return fd, int(pgrp) == syscall.Getpgrp()
}

// takeForeground makes our process group the terminal's foreground group
// again after CMD's; SIGTTOU is ignored meanwhile, as a shell does.
func takeForeground(fd int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
}
