package baton_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: no
// recipe, session or wait may leave one behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
