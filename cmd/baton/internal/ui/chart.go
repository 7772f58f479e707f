package ui

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

// The contention chart: acquisitions per second and wait quantiles per
// name over the last minutes, in bins.
const (
	chartStep    = 5 * time.Second
	chartBins    = 60  // 5 minutes
	chartSamples = 256 // wait samples kept per bin
	chartNames   = 1000
)

// chart derives each name's acquisitions and waits from the hand-offs
// the page's reads see. The contenders' own metrics (baton.acquire.duration)
// live in their processes; the store is what the ui can see of every
// contender, baton's or a peer's. An acquisition is a holder (or leader)
// not holding at the previous read, its wait that node's age when first
// seen holding (its time in line, plus up to the page's lag); a waiter that
// left the line while a later one holds took its turn in between (counted,
// with no wait sample). Reads by several open pages count each hand-off
// once.
type chart struct {
	mu    sync.Mutex
	names map[string]*lockSeries
}

type lockSeries struct {
	last    time.Time        // the newest read applied
	holders map[string]bool  // node#token holding at that read
	waiters map[string]int64 // node → token, waiting at that read
	bins    [chartBins]chartBin
}

type chartBin struct {
	start time.Time
	n     int
	waits []float64 // seconds
}

// ChartView is one name's chart: per bin, oldest first.
type ChartView struct {
	StepS        float64   `json:"step_s"`
	Acquisitions []int     `json:"acquisitions"`
	P50          []float64 `json:"p50_s"` // -1: no sample in the bin
	P99          []float64 `json:"p99_s"`
	Total        int       `json:"total"`
	// Over the last minute: acquisitions per second, and the wait
	// quantiles of its samples (-1: none).
	Rate1m float64 `json:"rate_1m"`
	P50m   float64 `json:"p50_1m_s"`
	P99m   float64 `json:"p99_1m_s"`
}

func newChart() *chart { return &chart{names: map[string]*lockSeries{}} }

func isHolding(role string) bool { return role == layout.RoleHolder || role == layout.RoleLeader }
func isWaiting(role string) bool { return role == layout.RoleWaiter || role == layout.RoleCandidate }

// observe applies a read of name made at at.
func (c *chart) observe(name string, entries []layout.Entry, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.names[name]
	if s == nil {
		if len(c.names) >= chartNames {
			c.evict()
		}
		s = &lockSeries{}
		c.names[name] = s
	}
	if !at.After(s.last) {
		return // an older read than one applied already
	}
	holders, waiters := map[string]bool{}, map[string]int64{}
	var top int64 = -1 << 63
	for _, e := range entries {
		switch {
		case isHolding(e.Role):
			holders[e.Node+"#"+strconv.FormatInt(e.Token, 10)] = true
			top = max(top, e.Token)
		case isWaiting(e.Role):
			waiters[e.Node] = e.Token
		}
	}
	if !s.last.IsZero() { // the first read is the baseline
		for _, e := range entries {
			if isHolding(e.Role) && !s.holders[e.Node+"#"+strconv.FormatInt(e.Token, 10)] {
				wait := -1.0
				if e.Age >= 0 {
					wait = e.Age.Seconds()
				}
				s.add(at, wait)
			}
		}
		for node, tok := range s.waiters {
			if _, still := waiters[node]; !still && len(holders) > 0 && tok < top && !holdsNode(holders, node) {
				s.add(at, -1)
			}
		}
	}
	s.last, s.holders, s.waiters = at, holders, waiters
}

func holdsNode(holders map[string]bool, node string) bool {
	for k := range holders {
		if len(k) > len(node) && k[:len(node)] == node && k[len(node)] == '#' {
			return true
		}
	}
	return false
}

// evict drops the name read longest ago.
func (c *chart) evict() {
	var oldest string
	var at time.Time
	for n, s := range c.names {
		if oldest == "" || s.last.Before(at) {
			oldest, at = n, s.last
		}
	}
	delete(c.names, oldest)
}

// add counts an acquisition at at, with its wait in seconds (-1: unknown).
func (s *lockSeries) add(at time.Time, wait float64) {
	start := at.Truncate(chartStep)
	b := &s.bins[int(start.Unix()/int64(chartStep/time.Second))%chartBins]
	if !b.start.Equal(start) {
		*b = chartBin{start: start}
	}
	b.n++
	if wait >= 0 && len(b.waits) < chartSamples {
		b.waits = append(b.waits, wait)
	}
}

// view returns name's chart over the bins up to now, or nil when no
// acquisition was seen in them.
func (c *chart) view(name string, now time.Time) *ChartView {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.names[name]
	if s == nil {
		return nil
	}
	v := &ChartView{StepS: chartStep.Seconds(), P50m: -1, P99m: -1}
	end := now.Truncate(chartStep)
	const minuteBins = int(time.Minute / chartStep)
	var minute []float64
	for i := chartBins - 1; i >= 0; i-- {
		start := end.Add(-time.Duration(i) * chartStep)
		b := s.bins[int(start.Unix()/int64(chartStep/time.Second))%chartBins]
		n, p50, p99 := 0, -1.0, -1.0
		if b.start.Equal(start) {
			n = b.n
			if i < minuteBins {
				v.Rate1m += float64(n) / time.Minute.Seconds()
				minute = append(minute, b.waits...)
			}
			if len(b.waits) > 0 {
				w := slices.Clone(b.waits)
				slices.Sort(w)
				p50, p99 = quantile(w, 0.5), quantile(w, 0.99)
			}
		}
		v.Acquisitions = append(v.Acquisitions, n)
		v.P50, v.P99 = append(v.P50, p50), append(v.P99, p99)
		v.Total += n
	}
	if v.Total == 0 {
		return nil
	}
	if len(minute) > 0 {
		slices.Sort(minute)
		v.P50m, v.P99m = quantile(minute, 0.5), quantile(minute, 0.99)
	}
	return v
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
