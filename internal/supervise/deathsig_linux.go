package supervise

import "syscall"

// setDeathSignal has the kernel SIGKILL CMD if the supervisor dies first (Linux's
// PR_SET_PDEATHSIG); the watchdog stops the rest of CMD's group.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
