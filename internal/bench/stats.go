package bench

import (
	"slices"
	"time"
)

// percentile returns the p-th percentile (0–100) of ds in microseconds,
// nearest-rank; nil for no samples.
func percentile(ds []time.Duration, p float64) *float64 {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return f64(float64(s[i].Nanoseconds()) / 1000)
}

// cycle is one acquisition by one client.
type cycle struct {
	client int
	order  int64 // acquisition order, assigned while holding
	req    time.Time
	acq    time.Time
	rel    time.Time // Unlock called
	done   time.Time // Unlock returned
}

// chainStats fills hand-off, re-acquisition, FIFO and overlap figures from
// the cycles of one lock.
func chainStats(r *Result, cs []cycle, clients int) {
	if len(cs) == 0 {
		return
	}
	s := slices.Clone(cs)
	slices.SortFunc(s, func(a, b cycle) int { return int(a.order - b.order) })
	var hand []time.Duration
	same := 0
	for k := 1; k < len(s); k++ {
		prev, cur := s[k-1], s[k]
		if cur.acq.Before(prev.rel) {
			r.Overlaps++
		}
		hand = append(hand, max(0, cur.acq.Sub(prev.done)))
		if cur.client == prev.client {
			same++
		}
	}
	r.HandoffP50, r.HandoffP99 = percentile(hand, 50), percentile(hand, 99)
	if len(s) > 1 {
		r.ReacquirePct = f64(100 * float64(same) / float64(len(s)-1))
	}
	r.FIFOPct = fifo(s, clients)

	per := make([]int, clients)
	for _, c := range s {
		per[c.client]++
	}
	r.MinPerClient, r.MaxPerClient = intp(slices.Min(per)), intp(slices.Max(per))
}

// fifo returns the share of acquisitions (in order) granted to the client
// whose pending request was the oldest: an acquisition is out of order when
// another client had asked earlier and was still waiting.
func fifo(s []cycle, clients int) *float64 {
	byClient := make([][]cycle, clients)
	for _, c := range s {
		byClient[c.client] = append(byClient[c.client], c)
	}
	next := make([]int, clients) // index of each client's first cycle not yet acquired
	fair, total := 0, 0
	for _, c := range s {
		ok := true
		for o := range byClient {
			if o == c.client {
				continue
			}
			for next[o] < len(byClient[o]) && !byClient[o][next[o]].acq.After(c.acq) {
				next[o]++
			}
			if next[o] < len(byClient[o]) && byClient[o][next[o]].req.Before(c.req) {
				ok = false
			}
		}
		total++
		if ok {
			fair++
		}
	}
	if total == 0 {
		return nil
	}
	return f64(100 * float64(fair) / float64(total))
}
