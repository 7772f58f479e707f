package demo

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestDemoOrderLines: the acquisition order is wrapped to 78 columns and,
// past 64 grants, shows the first 40 and the last 24 around a count of
// the rest: a few lines whatever --rounds and --workers are.
func TestDemoOrderLines(t *testing.T) {
	for _, n := range []int{1, 30, 64, 65, 1000, 100000} {
		order := make([]string, n)
		for i := range order {
			order[i] = fmt.Sprintf("w%d", i%12+1)
		}
		lines := orderLines(order)
		joined := strings.Join(lines, " ")
		words := strings.Fields(joined)
		for _, l := range lines {
			if utf8.RuneCountInString(l) > 78 || !strings.HasPrefix(l, "    w") && !strings.HasPrefix(l, "    …") {
				t.Errorf("%d grants: line %q", n, l)
			}
		}
		switch {
		case n <= 64 && (len(words) != n || words[0] != "w1" || words[n-1] != order[n-1]):
			t.Errorf("%d grants: not all shown: %q", n, lines)
		case n > 64 && (len(lines) > 6 || !strings.Contains(joined, fmt.Sprintf(" … %d more … ", n-64)) ||
			words[0] != "w1" || words[len(words)-1] != order[n-1]):
			t.Errorf("%d grants: %q", n, lines)
		}
	}
}

// TestDemoProgress: progress lines come a tenth of the total apart, so a
// long run prints at most nine (--rounds 200 printed one every 250 ms, a
// hundred and more); and the lock phase's bound grows with the
// acquisitions asked for.
func TestDemoProgress(t *testing.T) {
	for _, total := range []int{1, 5, 30, 40, 1000, 100000} {
		lines, last := 0, 0
		for n := 0; n <= total; n++ {
			if progressDue(n, last, total) {
				lines, last = lines+1, n
			}
		}
		if lines > 9 || total >= 20 && lines < 5 {
			t.Errorf("%d in all: %d progress lines", total, lines)
		}
	}
	if lockPhaseLimit(30) != 45*time.Second || lockPhaseLimit(1000) < 100*time.Second {
		t.Errorf("lock phase limits %v for 30 acquisitions, %v for 1000", lockPhaseLimit(30), lockPhaseLimit(1000))
	}
}
