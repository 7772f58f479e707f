package supervise

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// watchdogNice is the watchdog's nice value, where it may lower its own.
const watchdogNice = -10

// raisePriority lowers the nice value of every thread of this process, if
// allowed (root or CAP_SYS_NICE); on Linux a nice value belongs to a
// thread, and threads started later inherit it from their creator.
func raisePriority() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		_ = unix.Setpriority(unix.PRIO_PROCESS, 0, watchdogNice)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, watchdogNice)
		}
	}
}
