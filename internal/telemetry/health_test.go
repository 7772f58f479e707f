package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHealth: a hold within its deadline is healthy; one past its
// deadline by more than the tolerance fails the check (500, naming it)
// until it ends.
func TestHealth(t *testing.T) {
	h := NewHealth(100 * time.Millisecond)
	tel := New("memory", Config{Health: h})
	var deadline time.Time
	x := tel.Handle("mutex", "/jobs/a").StartHold(context.Background(), 7, func() time.Time { return deadline })
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	deadline = time.Now().Add(time.Second)
	if code, body := get(); code != http.StatusOK || h.Held() != 1 {
		t.Fatalf("within the deadline: %d %q, held %d", code, body, h.Held())
	}
	deadline = time.Now().Add(-50 * time.Millisecond) // within the tolerance
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("within the tolerance: %d %q", code, body)
	}
	deadline = time.Now().Add(-time.Second)
	code, body := get()
	if code != http.StatusInternalServerError || !strings.Contains(body, "mutex /jobs/a") {
		t.Fatalf("past the deadline: %d %q", code, body)
	}
	x.End(EndReleased, "", nil)
	if code, body := get(); code != http.StatusOK || h.Held() != 0 {
		t.Fatalf("after the release: %d %q, held %d", code, body, h.Held())
	}
	// A hold whose backend gives no deadline never fails the check.
	y := tel.Handle("mutex", "/jobs/b").StartHold(context.Background(), 8, func() time.Time { return time.Time{} })
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("hold without a deadline: %d", code)
	}
	y.End(EndReleased, "", nil)
}

// TestOff: without providers or health, New is nil and every call on the
// nil values is a no-op.
func TestOff(t *testing.T) {
	tel := New("zk", Config{})
	if tel != nil {
		t.Fatal("New without providers is not nil")
	}
	h := tel.Handle("mutex", "x")
	a := h.StartAcquire(context.Background())
	a.Queued(1)
	a.Wait()
	a.Retry()
	a.End(OutcomeAcquired, 1, nil)
	h.StartHold(context.Background(), 1, nil).End(EndLost, ReasonSessionLost, nil)
	h.Candidate()
	h.QueueDepth(1)
	h.QueueOldest(time.Second)
	h.Permits(1, 1)
	tel.Renewed(time.Second)
}

func BenchmarkOff(b *testing.B) {
	var tel *T
	h := tel.Handle("mutex", "x")
	ctx := context.Background()
	for b.Loop() {
		a := h.StartAcquire(ctx)
		a.End(OutcomeAcquired, 1, nil)
		h.StartHold(ctx, 1, nil).End(EndReleased, "", nil)
	}
}
