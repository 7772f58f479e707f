package store

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: a store
// opened, or given up on while opening, leaves nothing running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
