// Package testenv handles what a test needs from the machine (an engine,
// a tool, a library): without it the test is skipped, and fails when CI is
// set, since scripts/setup.sh installs everything there.
package testenv

import (
	"os"
	"testing"
)

// Require skips t, or fails it when CI is set, if err says that what the
// test needs is missing; what names it and how to install it.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v; skipping (set CI to make this a failure)", what, err)
}
