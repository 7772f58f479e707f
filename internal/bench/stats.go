package bench

import (
	"slices"
	"time"

	"github.com/batonhq/baton/internal/stats"
)

// percentile returns the p-th percentile (0–100) of ds in microseconds,
// nearest-rank; nil for no samples.
func percentile(ds []time.Duration, p float64) *float64 {
	if len(ds) == 0 {
		return nil
	}
	return f64(float64(stats.Percentile(ds, p).Nanoseconds()) / 1000)
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
// the cycles of one lock and the requests still pending at the end (a
// starved client has only those).
//
// Only cycles acquired once every client had asked at least once count:
// before that the first clients to start cycle alone and re-acquire.
func chainStats(r *Result, cs, pending []cycle, clients int) {
	s := steady(cs, pending, clients)
	if len(s) == 0 {
		return
	}
	slices.SortFunc(s, func(a, b cycle) int { return int(a.order - b.order) })
	var hand, sent []time.Duration
	same := 0
	for k := 1; k < len(s); k++ {
		prev, cur := s[k-1], s[k]
		if cur.acq.Before(prev.rel) {
			r.Overlaps++
		}
		hand = append(hand, max(0, cur.acq.Sub(prev.done)))
		sent = append(sent, max(0, cur.acq.Sub(prev.rel)))
		if cur.client == prev.client {
			same++
		}
	}
	r.HandoffP50, r.HandoffP99 = percentile(hand, 50), percentile(hand, 99)
	r.HandoffSentP50, r.HandoffSentP99 = percentile(sent, 50), percentile(sent, 99)
	if len(s) > 1 {
		r.ReacquirePct = f64(100 * float64(same) / float64(len(s)-1))
	}
	r.FIFOPct = fifo(s, pending, clients)

	per := make([]int, clients)
	for _, c := range s {
		per[c.client]++
	}
	r.MinPerClient, r.MaxPerClient = intp(slices.Min(per)), intp(slices.Max(per))
}

// steady returns, in acquisition order, the cycles acquired after the last
// client's first request.
func steady(cs, pending []cycle, clients int) []cycle {
	first := make([]time.Time, clients)
	for _, c := range slices.Concat(cs, pending) {
		if first[c.client].IsZero() || c.req.Before(first[c.client]) {
			first[c.client] = c.req
		}
	}
	var from time.Time
	for _, t := range first {
		if t.After(from) {
			from = t
		}
	}
	s := make([]cycle, 0, len(cs))
	for _, c := range cs {
		if !c.acq.Before(from) {
			s = append(s, c)
		}
	}
	slices.SortFunc(s, func(a, b cycle) int { return int(a.order - b.order) })
	return s
}

// fifoSlack is how much earlier another client must have asked for an
// acquisition to count as out of order: requests closer than that may
// reach the store in either order (scheduling, network).
const fifoSlack = time.Millisecond

// fifo returns the share of acquisitions (in order) granted in arrival
// order: an acquisition is out of order when another client had asked more
// than fifoSlack earlier and was still waiting.
func fifo(s, pending []cycle, clients int) *float64 {
	byClient := make([][]cycle, clients)
	for _, c := range s {
		byClient[c.client] = append(byClient[c.client], c)
	}
	never := time.Unix(1<<40, 0) // a pending request is granted after everything
	for _, c := range pending {
		c.acq = never
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
			if next[o] < len(byClient[o]) && byClient[o][next[o]].req.Before(c.req.Add(-fifoSlack)) {
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
