package reliability

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	if os.Getenv(redisWaiterEnv) != "" {
		os.Exit(redisWaiterMain())
	}
	code := m.Run()
	if err := writeReport(); err != nil {
		fmt.Fprintln(os.Stderr, "reliability: report:", err)
		code = 1
	}
	if testing.Verbose() || os.Getenv("BATON_RELIABILITY_REPORT") != "" {
		fmt.Print(Table())
	}
	os.Exit(code)
}
