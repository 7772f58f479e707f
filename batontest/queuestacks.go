package batontest

import (
	"runtime"
	"strings"
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
