package postgres

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/pgtest"
)

// TestMain stops the shared server and fails the package if a goroutine
// outlives its tests: every session, pool and listener is closed.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
