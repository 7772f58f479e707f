package batontest

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// consumerStacks returns the stacks of the queue load tests' consumers
// and of the waits they run (waitEither's watches), so that a queue that
// never drained says where its consumers were blocked. At most limit
// bytes.
func consumerStacks(limit int) string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out strings.Builder
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !strings.Contains(g, "created by github.com/batonhq/baton/batontest.loadKillingOne") &&
			!strings.Contains(g, "created by github.com/batonhq/baton.waitEither") {
			continue
		}
		if out.Len()+len(g) > limit {
			out.WriteString("… (more goroutines left out)\n")
			break
		}
		out.WriteString(g)
		out.WriteString("\n\n")
	}
	return out.String()
}

// drainWatch follows the progress of a queue's consumers (done, the count
// of items through) while the test waits for the queue to drain, so that
// a drain that timed out tells a stall (no item through for long) from
// consumers too slow for the wait.
type drainWatch struct {
	stop chan struct{}
	done chan struct{}

	start, last    time.Time
	from, to       int64
	longest        time.Duration // the longest time without an item through
	lastProgressAt time.Time
}

func watchDrain(done func() int64) *drainWatch {
	now := time.Now()
	d := &drainWatch{stop: make(chan struct{}), done: make(chan struct{}), start: now, lastProgressAt: now}
	d.from = done()
	d.to = d.from
	go func() {
		defer close(d.done)
		for {
			select {
			case <-d.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			d.sample(done())
		}
	}()
	return d
}

func (d *drainWatch) sample(n int64) {
	now := time.Now()
	if n != d.to {
		d.to, d.lastProgressAt = n, now
	}
	d.longest = max(d.longest, now.Sub(d.lastProgressAt))
	d.last = now
}

// end stops the watch and says what it saw.
func (d *drainWatch) end() string {
	close(d.stop)
	<-d.done
	return fmt.Sprintf("%d items went through in the %v wait; the longest time without one was %v, the last one %v before the end",
		d.to-d.from, d.last.Sub(d.start).Round(time.Millisecond), d.longest.Round(time.Millisecond),
		d.last.Sub(d.lastProgressAt).Round(time.Millisecond))
}
