package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Result is one workload's measurement. Times are in microseconds. A
// figure that does not apply to the workload, or that the store cannot
// report, is nil and prints as "-" (null in JSON).
type Result struct {
	Impl     string `json:"impl"`
	Store    string `json:"store"`
	Workload string `json:"workload"`
	Clients  int    `json:"clients"`
	Locks    int    `json:"locks,omitempty"`

	Acquisitions int     `json:"acquisitions"`
	Seconds      float64 `json:"seconds"`
	AcqPerS      float64 `json:"acq_per_s"`

	// CycleP50/P99: one lock+unlock cycle (uncontended, floor).
	CycleP50 *float64 `json:"cycle_p50_us"`
	CycleP99 *float64 `json:"cycle_p99_us"`
	// WaitP50/P99: from calling Lock to it returning; a request still
	// waiting when a timed run ends counts with its wait so far.
	WaitP50 *float64 `json:"wait_p50_us"`
	WaitP99 *float64 `json:"wait_p99_us"`
	// HandoffP50/P99: from a release returning to the next holder's Lock
	// returning; 0 when the next holder was already running.
	HandoffP50 *float64 `json:"handoff_p50_us"`
	HandoffP99 *float64 `json:"handoff_p99_us"`
	// HandoffSentP50/P99: from a release being sent (Unlock called) to
	// the next holder's Lock returning, the release's own round trip and
	// commit included.
	HandoffSentP50 *float64 `json:"handoff_sent_p50_us,omitempty"`
	HandoffSentP99 *float64 `json:"handoff_sent_p99_us,omitempty"`
	// FiresPerRelease: watch notifications per release that woke a waiter.
	FiresPerRelease *float64 `json:"fires_per_release"`
	// ServerFiresPerRelease (herd): the notifications the store's servers
	// sent per release, by their own count, where they keep one.
	ServerFiresPerRelease *float64 `json:"server_fires_per_release,omitempty"`
	// ReacquirePct: share of acquisitions by the client that held the lock
	// just before (back-to-back re-acquisition).
	ReacquirePct *float64 `json:"reacquire_pct"`
	// FIFOPct: share of acquisitions granted in arrival order (no other
	// client that asked more than 1 ms earlier was still waiting).
	FIFOPct *float64 `json:"fifo_pct"`
	// MinPerClient/MaxPerClient: fewest and most acquisitions by one client.
	MinPerClient *int `json:"min_per_client"`
	MaxPerClient *int `json:"max_per_client"`
	// ServerRequestsPerAcq: client requests the store's servers received
	// per acquisition, from the store's own counters (on Redis, the
	// commands they ran, those inside scripts included).
	ServerRequestsPerAcq *float64 `json:"server_requests_per_acq"`
	// ServerRoundTripsPerAcq: on Redis, the requests clients sent per
	// acquisition (a script counting once), from the servers' reads.
	ServerRoundTripsPerAcq *float64 `json:"server_round_trips_per_acq,omitempty"`
	// ServerUsPerAcq: on PostgreSQL, the time the server spent running
	// statements per acquisition, in µs (pg_stat_statements).
	ServerUsPerAcq *float64 `json:"server_us_per_acq,omitempty"`
	// RSSMB: the process's resident set with all waiters queued (footprint).
	RSSMB *float64 `json:"rss_mb"`
	// HeapMB: the Go heap in use at the same moment (footprint).
	HeapMB *float64 `json:"heap_mb"`

	// Errors counts failed Lock/Unlock calls.
	Errors int `json:"errors"`
	// Overlaps counts acquisitions that returned before the previous
	// holder had started to release: mutual-exclusion violations.
	Overlaps int    `json:"overlaps"`
	Note     string `json:"note,omitempty"`
	// Repeat numbers one of several interleaved runs whose median is
	// reported in a result of its own (Repeat 0).
	Repeat int `json:"repeat,omitempty"`
}

func f64(v float64) *float64 { return &v }
func intp(v int) *int        { return &v }

// WriteJSON writes r as one JSON line.
func (r Result) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// TableHeader is the column list WriteTable prints.
var TableHeader = []string{"impl", "store", "workload", "clients", "acq/s",
	"cycle p50", "cycle p99", "wait p50", "wait p99", "hand-off p50", "hand-off p99",
	"fires/rel", "reacq %", "fifo %", "min/max", "req/acq", "rt/acq", "rss MB", "err"}

// Row formats r as the cells of one table row (times in ms).
func (r Result) Row() []string {
	ms := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", *p/1000)
	}
	mm := "-"
	if r.MinPerClient != nil && r.MaxPerClient != nil {
		mm = fmt.Sprintf("%d/%d", *r.MinPerClient, *r.MaxPerClient)
	}
	clients := fmt.Sprint(r.Clients)
	if r.Locks > 0 {
		clients = fmt.Sprintf("%d×%d", r.Locks, r.Clients)
	}
	return []string{r.Impl, r.Store, r.Workload, clients, fmt.Sprintf("%.0f", r.AcqPerS),
		ms(r.CycleP50), ms(r.CycleP99), ms(r.WaitP50), ms(r.WaitP99), ms(r.HandoffP50), ms(r.HandoffP99),
		num(r.FiresPerRelease, 3), num(r.ReacquirePct, 1), num(r.FIFOPct, 1), mm,
		num(r.ServerRequestsPerAcq, 2), num(r.ServerRoundTripsPerAcq, 2), num(r.RSSMB, 1), fmt.Sprint(r.Errors)}
}

// WriteTable writes results as an aligned text table (times in ms).
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(TableHeader, "\t")+"\t")
	for _, r := range rs {
		fmt.Fprintln(tw, strings.Join(r.Row(), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Note != "" && r.Workload == "telemetry" {
			if _, err := fmt.Fprintf(w, "%s %s: %s\n", r.Impl, r.Store, r.Note); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteMarkdown writes results as a Markdown table (times in ms).
func WriteMarkdown(w io.Writer, rs []Result) error {
	fmt.Fprintf(w, "| %s |\n", strings.Join(TableHeader, " | "))
	seps := make([]string, len(TableHeader))
	for i := range seps {
		seps[i] = "---"
		if i >= 3 {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range rs {
		if r.Repeat > 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(r.Row(), " | ")); err != nil {
			return err
		}
	}
	return nil
}

// num formats an optional figure with prec decimals, or "-" without one.
func num(p *float64, prec int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *p)
}
