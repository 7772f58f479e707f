package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/proxy"
)

// Partition: a TCP proxy blackholes the holder. Its lost signal must fire
// before any other session acquires; the margin is how much earlier.
func TestPartition(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.kind, func(t *testing.T) {
			n := runs(3, 20)
			row := Row{Scenario: "partition: holder blackholed", Store: tg.kind, Runs: n}
			for i := range n {
				margin, recovery, ok := partitionOnce(t, tg)
				if !ok {
					row.Violations++
					t.Errorf("run %d: another session acquired before the holder knew it lost the lock", i)
				}
				row.Margins = append(row.Margins, margin)
				row.Recovery = append(row.Recovery, recovery)
			}
			row.Note = "recovery = blackhole → next holder; margin = holder's loss signal → next holder"
			record(row)
		})
	}
}

func partitionOnce(t *testing.T, tg target) (margin, recovery time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := tg.path()
	p := proxy.Start(t, tg.addr)
	holder := tg.open(t, p.Addr())
	other := tg.open(t, tg.addr)
	held, err := baton.NewMutex(holder, name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostAt := make(chan time.Time, 1)
	go func() { <-held.Done(); lostAt <- time.Now() }()
	got := make(chan error, 1)
	var acquiredAt time.Time
	var heldStill bool
	go func() {
		_, err := baton.NewMutex(other, name).Lock(ctx)
		acquiredAt = time.Now()
		select {
		case <-held.Done():
		default:
			heldStill = true
		}
		got <- err
	}()
	start := time.Now()
	p.Blackhole()
	defer p.Heal()
	if err := <-got; err != nil {
		t.Fatalf("other Lock: %v", err)
	}
	lost := <-lostAt
	return acquiredAt.Sub(lost), acquiredAt.Sub(start), !heldStill
}
