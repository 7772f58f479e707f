package main

import (
	"fmt"
	"testing"
	"time"
)

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
