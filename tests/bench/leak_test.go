package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: every
// session and client the tests open is closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
