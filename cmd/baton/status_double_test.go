package main

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

// TestStatusDoubleBarrier: a double barrier's participants (with their
// identity) and whether it is open, before and while the last one enters.
func TestStatusDoubleBarrier(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/st-dbl-" + st.name
		a := start(t, e, "barrier", "double", "-n", "3", name, "--", "true")
		b := start(t, e, "barrier", "double", "-n", "3", name, "--", "true")
		rep := pollStatus(t, e, name, func(r statusReport) bool { return r.Participants == 2 })
		if rep.Open || rep.Held || len(rep.Recipes) != 1 || rep.Recipes[0] != layout.RecipeDoubleBarrier {
			t.Fatalf("double barrier with 2 of 3 in: %+v", rep)
		}
		pids := map[int]bool{a.cmd.Process.Pid: true, b.cmd.Process.Pid: true}
		for _, x := range rep.Entries {
			if x.Role != layout.RoleParticipant || !pids[x.PID] || x.Cmd != "baton barrier double "+name {
				t.Fatalf("participant %+v", x)
			}
		}
		if out, _, _ := run(t, e, "status", name); !strings.Contains(out, "double-barrier (2 in, not open)") {
			t.Fatalf("text status %q", out)
		}
		c := start(t, e, "barrier", "double", "-n", "3", name, "--", "true")
		for _, p := range []*proc{a, b, c} {
			if code := p.wait(20 * time.Second); code != 0 {
				t.Fatalf("participant exit %d: %q", code, p.stderr.String())
			}
		}
		pollStatus(t, e, name, func(r statusReport) bool { return r.Participants == 0 })
	})
}
