package telemetry

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Health is a liveness check over the leases a process holds, in the
// style of client-go's leader-election watchdog: it fails when a lease the
// process still believes it holds is past its deadline by more than a
// tolerance. A process that is wedged (stopped, starved, deadlocked) and so
// has not noticed that its lease may be gone then fails its liveness probe.
//
// A Health is an http.Handler: it answers 200 "ok" while every hold is
// within its deadline and 500 naming the overdue holds otherwise.
type Health struct {
	tolerance time.Duration

	mu    sync.Mutex
	holds map[*Hold]struct{}
}

// NewHealth returns a check that tolerates tolerance past a lease's
// deadline (client-go's HealthzAdaptor timeout).
func NewHealth(tolerance time.Duration) *Health {
	return &Health{tolerance: tolerance, holds: map[*Hold]struct{}{}}
}

func (h *Health) add(x *Hold) {
	h.mu.Lock()
	h.holds[x] = struct{}{}
	h.mu.Unlock()
}

func (h *Health) remove(x *Hold) {
	h.mu.Lock()
	delete(h.holds, x)
	h.mu.Unlock()
}

// Check returns nil while every lease held through this check is within
// its deadline plus the tolerance, and an error naming the overdue ones
// otherwise.
func (h *Health) Check() error {
	now := time.Now()
	var late []string
	h.mu.Lock()
	for x := range h.holds {
		if x.deadline == nil {
			continue
		}
		d := x.deadline()
		if !d.IsZero() && now.After(d.Add(h.tolerance)) {
			late = append(late, fmt.Sprintf("%s %s (%s past its deadline)", x.h.recipe, x.h.name, now.Sub(d).Round(time.Millisecond)))
		}
	}
	h.mu.Unlock()
	if len(late) == 0 {
		return nil
	}
	sort.Strings(late)
	return fmt.Errorf("baton: held past the deadline: %s", strings.Join(late, "; "))
}

// Held is the number of leases currently held through this check.
func (h *Health) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holds)
}

// ServeHTTP answers 200 "ok" or 500 with Check's error.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := h.Check(); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}
