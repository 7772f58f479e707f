package supervise

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// foregroundTTY returns the descriptor of f if f is a terminal whose
// foreground process group is ours: CMD, in a group of its own, must then
// be made the foreground group, or reading the terminal would stop it.
func foregroundTTY(f *os.File) (int, bool) {
	if f == nil {
		return 0, false
	}
	fd := int(f.Fd())
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return 0, false // not a terminal
	}
	return fd, pgrp == unix.Getpgrp()
}

// takeForeground makes our process group the terminal's foreground group
// again after CMD's; SIGTTOU is ignored meanwhile, as a shell does.
func takeForeground(fd int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
}
