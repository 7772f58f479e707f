package supervise

import (
	"testing"
	"time"
)

// TestWatchdogSchedule: the watchdog's SIGTERM comes the grace before the
// deadline and only once; its SIGKILL at the deadline, or --kill-after
// after the SIGTERM if that is earlier (contact came back: the deadline
// moved on, but the hold is given up); a stop from baton SIGTERMs at once
// unless the grace did, and brings the SIGKILL forward, never back.
func TestWatchdogSchedule(t *testing.T) {
	const s = int64(time.Second)
	type step struct {
		line string // read first, if any
		at   int64  // now
		act  int
		next int64
	}
	for _, tc := range []struct {
		name  string
		w     watch
		steps []step
	}{
		{"grace then deadline", watch{grace: s, killAfter: 10 * s}, []step{
			{"d 10000000000", 0, actWait, 9 * s},
			{"", 9 * s, actGrace, 0},
			{"", 9 * s, actWait, 10 * s},
			{"", 10 * s, actFire, 0},
		}},
		{"contact back after the grace", watch{grace: s, killAfter: 3 * s}, []step{
			{"d 10000000000", 0, actWait, 9 * s},
			{"", 9 * s, actGrace, 0},
			{"", 9 * s, actWait, 10 * s},
			{"d 20000000000", 9*s + s/2, actWait, 12 * s},
			{"", 12 * s, actKill, 0},
		}},
		{"renewals keep it quiet", watch{grace: s, killAfter: 10 * s}, []step{
			{"d 10000000000", 0, actWait, 9 * s},
			{"d 15000000000", 5 * s, actWait, 14 * s},
		}},
		{"no grace", watch{killAfter: 10 * s}, []step{
			{"d 10000000000", 0, actWait, 10 * s},
			{"", 10 * s, actFire, 0},
		}},
		{"a stop, then the deadline first", watch{grace: s, killAfter: 10 * s}, []step{
			{"d 10000000000", 0, actWait, 9 * s},
			{"t 12000000000", 2 * s, actTerm, 0},
			{"", 2 * s, actWait, 10 * s},
			{"", 10 * s, actFire, 0},
		}},
		{"a stop after the grace: no second SIGTERM", watch{grace: s, killAfter: 10 * s}, []step{
			{"d 10000000000", 0, actWait, 9 * s},
			{"", 9 * s, actGrace, 0},
			{"t 9600000000", 9*s + s/2, actWait, 9600000000},
			{"", 9600000000, actKill, 0},
		}},
		{"lost already", watch{grace: s}, []step{{"d 0", 0, actFire, 0}}},
		{"no deadline: a stop and its kill", watch{grace: s}, []step{
			{"t 3000000000", 0, actTerm, 0},
			{"", 0, actWait, 3 * s},
			{"", 3 * s, actKill, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			for i, st := range tc.steps {
				if st.line != "" && !w.read(st.line) {
					t.Fatalf("line %q refused", st.line)
				}
				if act, next := w.step(st.at); act != st.act || next != st.next {
					t.Fatalf("step %d at %v: act %d next %v, want %d %v", i, time.Duration(st.at), act, time.Duration(next), st.act, time.Duration(st.next))
				}
			}
		})
	}
	var w watch
	for _, bad := range []string{"", "d", "d x", "x 1", "d 1 2"} {
		if w.read(bad) {
			t.Errorf("line %q taken", bad)
		}
	}
}
