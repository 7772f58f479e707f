package reliability

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/stats"
)

// Row is one scenario's result on one store.
type Row struct {
	Scenario   string
	Store      string
	Runs       int
	Violations int
	// Recovery holds the measured times (e.g. fault → next holder).
	Recovery []time.Duration
	// Margins holds, for partitions, how long before the next holder
	// acquired the cut-off holder knew it had lost the lock.
	Margins []time.Duration
	Note    string
}

var (
	rowsMu sync.Mutex
	rows   []Row
)

// record adds a result to the report.
func record(r Row) {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	rows = append(rows, r)
}

// summary is "min / median / max" of ds, to the millisecond.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	r := func(p float64) string { return stats.Percentile(ds, p).Round(time.Millisecond).String() }
	return fmt.Sprintf("%s / %s / %s", r(0), r(50), r(100))
}

// Table renders the recorded rows as a Markdown table.
func Table() string {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	var b strings.Builder
	b.WriteString("| scenario | store | runs | violations | recovery min / median / max | loss-signal margin min / median / max | notes |\n")
	b.WriteString("|---|---|---:|---:|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s |\n",
			r.Scenario, r.Store, r.Runs, r.Violations, summary(r.Recovery), summary(r.Margins), r.Note)
	}
	return b.String()
}

// writeReport writes the table to $BATON_RELIABILITY_REPORT if set.
func writeReport() error {
	path := os.Getenv("BATON_RELIABILITY_REPORT")
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(Table()), 0o644)
}

// full reports whether the full (long) run was asked for.
func full() bool { return os.Getenv("BATON_RELIABILITY") == "full" }

// independent marks a scenario that runs on servers of its own and spends
// its time waiting (for a failover, a restart, a TTL): in the bounded run
// it runs beside the other such scenarios (t.Parallel: after the others,
// up to -parallel at a time), which also tries it with neighbours. The
// full run (scripts/reliability.sh) runs every scenario alone, as its rows
// in docs/RELIABILITY.md were measured.
func independent(t *testing.T) {
	if !full() {
		t.Parallel()
	}
}

// runs picks the bounded or the full count.
func runs(bounded, fullRuns int) int {
	if full() {
		return fullRuns
	}
	return bounded
}

func itoa64(n int64) string { return fmt.Sprint(n) }
