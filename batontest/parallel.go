package batontest

import "testing"

// testCase is one conformance test.
type testCase struct {
	name string
	fn   func(t *testing.T, h Harness)
}

// alone are the tests that read counts of the whole store
// (Harness.PendingWatches, Harness.WatchFires): the herd tests and the
// barrier's. With Harness.Parallel they still run one at a time, before
// the others start, so that no other test's watches are counted.
var alone = map[string]bool{
	"Mutex/HerdFree":         true,
	"RWMutex/HerdFree":       true,
	"Semaphore/HerdFree":     true,
	"Barrier/TenWaitOneDies": true,
}

// runCases runs each case as a subtest of t: beside each other with
// h.Parallel, the ones in alone first and by themselves. (Subtests that
// call t.Parallel wait until the loop has run the others.)
func runCases(t *testing.T, h Harness, cases []testCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !h.Parallel || alone[tc.name] {
				tc.fn(t, h)
				return
			}
			t.Parallel()
			tc.fn(t, h.besideOthers())
		})
	}
}

// besideOthers is h for a test that runs beside others: a count of the
// whole store would count their watches too, so reading one fails the
// test, which must then be listed in alone.
func (h Harness) besideOthers() Harness {
	if h.PendingWatches != nil {
		h.PendingWatches = func(t testing.TB) int {
			t.Fatal("batontest: PendingWatches counts the whole store, and other tests run beside this one: list it in alone")
			return 0
		}
	}
	if h.WatchFires != nil {
		h.WatchFires = func(t testing.TB) int64 {
			t.Fatal("batontest: WatchFires counts the whole store, and other tests run beside this one: list it in alone")
			return 0
		}
	}
	return h
}
