package redistest

import (
	"time"

	"go.uber.org/goleak"
)

// dialProbeGrace is how long a go-redis pool's dial probe may outlive the
// pool's Close. After as many failed dials as its pool size (a master
// killed under its clients), go-redis v9 probes the server from a
// goroutine of its own (ConnPool.tryDial) that sleeps a second between
// dials and sees its pool closed only when it wakes; a dial to a loopback
// port is refused at once. So the probe ends within a second of Close,
// plus a dial.
const dialProbeGrace = 3 * time.Second

// FindLeaks is goleak.Find for a test binary whose Redis clients may have
// run into dead servers: it looks again for up to dialProbeGrace while
// goroutines remain, so that a dial probe in its last sleep after Close
// is not taken for a leak. A goroutine that never ends still fails.
func FindLeaks(opts ...goleak.Option) error {
	deadline := time.Now().Add(dialProbeGrace)
	for {
		err := goleak.Find(opts...) // itself retries for about 0.4 s
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
