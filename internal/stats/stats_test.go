package stats

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	ds := ms(5, 1, 4, 2, 3, 10, 9, 8, 7, 6) // 1..10, shuffled
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {10, 1}, {50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := Percentile(ds, tc.p); got != tc.want*time.Millisecond {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want*time.Millisecond)
		}
	}
	if ds[0] != 5*time.Millisecond {
		t.Error("Percentile sorted its argument")
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("no samples: %v", got)
	}
}
