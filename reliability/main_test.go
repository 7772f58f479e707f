package reliability

import (
	"fmt"
	"os"
	"testing"

	"github.com/batonhq/baton/internal/redistest"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	if os.Getenv(leaderEnv) != "" {
		os.Exit(leaderMain())
	}
	if os.Getenv(redisWaiterEnv) != "" {
		os.Exit(redisWaiterMain())
	}
	code := m.Run()
	if code == 0 {
		// Every scenario closes the sessions it opens.
		if err := redistest.FindLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlive the tests:", err)
			code = 1
		}
	}
	if err := writeReport(); err != nil {
		fmt.Fprintln(os.Stderr, "reliability: report:", err)
		code = 1
	}
	if testing.Verbose() || os.Getenv("BATON_RELIABILITY_REPORT") != "" {
		fmt.Print(Table())
	}
	os.Exit(code)
}
