package supervise

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain makes the test binary its own watchdog (`watchdog ARGS`) and
// its own supervisor (`supervisor ...`, for the tests that kill or stop
// one), and checks that no goroutine outlives the tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "watchdog":
			if err := Watchdog(os.Args[2:], os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(1)
		case "supervisor":
			os.Exit(supervisorMain(os.Args[2:]))
		}
	}
	goleak.VerifyTestMain(m)
}

// watchdogCmd is Spec.Watchdog for the tests: this binary.
func watchdogCmd() []string { return []string{os.Args[0], "watchdog"} }

// supervisorMain is `supervisor DEADLINE GRACE -- CMD...`: it runs CMD
// under a watchdog with a fixed loss deadline (Unix nanoseconds) and
// prints the Result as JSON.
func supervisorMain(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "supervisor DEADLINE GRACE -- CMD...")
		return 2
	}
	ns, err1 := strconv.ParseInt(args[0], 10, 64)
	grace, err2 := time.ParseDuration(args[1])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, err1, err2)
		return 2
	}
	deadline := time.Unix(0, ns)
	res, err := Run(Spec{
		Argv: args[3:], Env: os.Environ(), Stdout: os.Stderr, Stderr: os.Stderr,
		Stop: Stop{Grace: grace, KillAfter: time.Minute}, Watchdog: watchdogCmd(),
		Expiry: func() time.Time { return deadline },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// procState is the state letter of pid in /proc ("T": stopped), or "".
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if err != nil || i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// readStamps reads the Unix nanosecond stamps in path, one a line.
func readStamps(t testing.TB, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", path, b)
		}
		out = append(out, n)
	}
	return out
}
