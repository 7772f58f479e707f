// Package stats summarises measured durations for the benchmarks
// (internal/bench) and the fault suite's report (reliability).
package stats

import (
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0–100) of ds by nearest rank:
// the smallest sample at or above p percent of them; 0 is the least, 100
// the greatest. It returns 0 for no samples and leaves ds as it is.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
