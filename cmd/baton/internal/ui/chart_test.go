package ui

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

// TestUIChartCounts: hand-offs seen by reads count once each, whatever the
// number of pages reading; the first read is a baseline; a waiter that
// left the line while a later one holds took its turn; a stale read is
// ignored; the wait is the new holder's age.
func TestUIChartCounts(t *testing.T) {
	c := newChart()
	at := time.Now()
	entry := func(node string, tok int64, role string, age time.Duration) layout.Entry {
		return layout.Entry{Node: node, Token: tok, Role: role, Age: age}
	}
	read := func(d time.Duration, es ...layout.Entry) { c.observe("n", es, at.Add(d)) }
	read(0, entry("a", 1, layout.RoleHolder, time.Minute), entry("b", 2, layout.RoleWaiter, time.Second))
	read(0, entry("a", 1, layout.RoleHolder, time.Minute)) // same time: ignored
	if v := c.view("n", at); v != nil {
		t.Fatalf("the baseline counted: %+v", v)
	}
	for range 2 { // two pages read the same state
		read(time.Millisecond, entry("b", 2, layout.RoleHolder, 300*time.Millisecond), entry("c", 3, layout.RoleWaiter, 0))
	}
	read(-time.Second, entry("a", 1, layout.RoleHolder, time.Minute)) // stale
	// c took its turn and left unseen; d holds.
	read(2*time.Millisecond, entry("d", 4, layout.RoleHolder, 100*time.Millisecond))
	v := c.view("n", at.Add(3*time.Millisecond))
	if v == nil || v.Total != 3 {
		t.Fatalf("chart %+v, want 3 acquisitions (b, c, d)", v)
	}
	last := len(v.P99) - 1
	if v.P50[last] != 0.1 || v.P99[last] != 0.3 || v.P50m != 0.1 || v.P99m != 0.3 {
		t.Errorf("waits p50 %v p99 %v (minute %v %v), want 0.1 and 0.3", v.P50[last], v.P99[last], v.P50m, v.P99m)
	}
	if v.Rate1m != 3.0/60 {
		t.Errorf("rate over the minute %v, want %v", v.Rate1m, 3.0/60)
	}
	if v := c.view("n", at.Add(10*time.Minute)); v != nil {
		t.Errorf("acquisitions older than the chart still shown: %+v", v)
	}
}
