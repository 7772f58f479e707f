// Package proctest has what tests of processes share: whether a process
// runs, and a wait for a file that a process writes.
package proctest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Alive reports whether pid runs (a zombie does not), from /proc.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// WaitFile waits up to d for path to hold s, and returns what it holds;
// it fails tb if d passes first.
func WaitFile(tb testing.TB, path, s string, d time.Duration) string {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return string(b)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not get %q within %v; it has %q", path, s, d, b)
		}
		<-time.After(10 * time.Millisecond) // poll interval
	}
}
