package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: no
// session, watch or wait may leave one behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
