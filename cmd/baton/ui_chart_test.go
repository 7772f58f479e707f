package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

// TestUIChartCounts: hand-offs seen by reads count once each, whatever the
// number of pages reading; the first read is a baseline; a waiter that
// left the line while a later one holds took its turn; a stale read is
// ignored; the wait is the new holder's age.
func TestUIChartCounts(t *testing.T) {
	c := newUIChart()
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

// TestUIContentionChart: after hand-offs between contending processes, a
// page opened afterwards shows the name's chart with their acquisitions
// and wait lines.
func TestUIContentionChart(t *testing.T) {
	t.Parallel()
	eachUIStore(t, "uic", func(t *testing.T, r uiRig) {
		ctx, e := r.ctx, r.e
		name := r.prefix + "/job"
		first := startHeld(t, e, "lock", name)
		// The page is opened only after the contention: the server
		// charts the first page while nobody looks.
		url := startUI(t, e, "--prefix", r.prefix)
		var brief []*proc
		for range 4 {
			brief = append(brief, start(t, e, "lock", name, "--", "sleep", "0.2"))
		}
		waitStatus(t, e, name, 5)
		last := start(t, e, "lock", name)
		waitStatus(t, e, name, 6)
		first.signal(2)
		last.waitOutput("BATON_TOKEN=", 20*time.Second)
		for _, p := range brief {
			if code := p.wait(10 * time.Second); code != 0 {
				t.Fatalf("a contender exited %d", code)
			}
		}
		navigate(t, ctx, url)
		chart := fmt.Sprintf(`(() => { const b = [...document.querySelectorAll(".instance")].find(e => e.dataset.name === %q);
  const c = b && b.querySelector(".chart");
  return c ? String(+c.dataset.total >= 3 && !!c.querySelector("rect.bar") && !!c.querySelector("polyline.p99") && !!c.querySelector("polyline.p50")) : "none" })()`, name)
		waitDOM(t, ctx, chart, "true", 10*time.Second)
		t.Logf("chart: %s", domText(t, ctx, `document.querySelector(".chart-caption").textContent`))
		last.signal(2)
	})
}
