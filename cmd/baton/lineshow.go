package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// clearLine returns a terminal's cursor to the start of a cleared line.
const clearLine = "\r\033[K"

// The wait display reads the line without watches (a waiter's only watch
// is its predecessor's, whatever its output is wired to): at once, then
// after pauses that double from showFirst up to showEvery, or showPerAhead
// for each contender ahead when that is longer, at most showSlowest: far
// back in a long line, little that it shows changes. A read costs a few
// listings (lineReader): thirty waiters with -v ask ZooKeeper for about
// 40 requests a second, etcd for about 110 (docs/OBSERVABILITY.md). A
// terminal's line is redrawn each showRedraw in between, its ages moved on
// from the last read.
const (
	showFirst    = 100 * time.Millisecond
	showEvery    = 2 * time.Second
	showPerAhead = 100 * time.Millisecond
	showSlowest  = 30 * time.Second
	showRedraw   = time.Second
)

// showWait shows, until the returned func is called, where this command
// waits in line and who holds: redrawn in place when stderr is a
// terminal, one line per change with -v, nothing otherwise.
func (l *line) showWait(ctx context.Context, s *store.Store) func() {
	tty := isTerminal(l.m.Stderr)
	if !tty && !l.verbose {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	drawn := false
	go func() {
		defer wg.Done()
		srcs := make([]statusReader, len(l.names))
		for i, n := range l.names {
			srcs[i] = lineReaderFor(s, n, tty)
		}
		var (
			last  string
			seen  waitSeen
			pause = showFirst
			next  time.Time // of the next read
		)
		for {
			if !time.Now().Before(next) {
				w, err := readWait(ctx, l.names, srcs)
				if err == nil {
					seen, next = w, w.at.Add(pause)
					_, ahead, _ := waitingLine(w.name, w.rep, tty)
					pause = min(2*pause, max(showEvery, min(time.Duration(ahead)*showPerAhead, showSlowest)))
				} else {
					next = time.Now().Add(time.Second) // a failed read: try again
				}
			}
			if seen.name != "" {
				msg, _, _ := waitingLine(seen.name, olderBy(seen.rep, time.Since(seen.at)), tty)
				if msg != "" && msg != last {
					last = msg
					if tty {
						fmt.Fprint(l.m.Stderr, clearLine+msg)
						drawn = true
					} else {
						fmt.Fprintln(l.m.Stderr, msg)
					}
				}
			}
			d := time.Until(next)
			if tty {
				d = min(d, showRedraw) // a terminal shows ages
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		if drawn {
			fmt.Fprint(l.m.Stderr, clearLine)
		}
	}
}

// waitSeen is what the wait display read last: name's status, and when.
type waitSeen struct {
	name string
	rep  statusReport
	at   time.Time
}

// readWait reads the names in turn (MultiLock takes them in this order) up
// to the first where this process waits, or the last.
func readWait(ctx context.Context, names []string, srcs []statusReader) (waitSeen, error) {
	for i, src := range srcs {
		rep, err := src.read(ctx)
		if err != nil {
			return waitSeen{}, err
		}
		if _, _, waiting := waitingLine(names[i], rep, false); waiting || i == len(srcs)-1 {
			return waitSeen{name: names[i], rep: rep, at: time.Now()}, nil
		}
	}
	return waitSeen{}, errors.New("no name to wait for")
}

// olderBy is rep as it stands d after it was read: its nodes older by d.
// Their TTLs stay as read: a renewed lease's TTL does not run down.
func olderBy(rep statusReport, d time.Duration) statusReport {
	rep.Entries = slices.Clone(rep.Entries)
	for i := range rep.Entries {
		if rep.Entries[i].Age >= 0 {
			rep.Entries[i].Age += d
		}
	}
	return rep
}

// me is this process as its identity names it in the nodes it writes.
var me = baton.DefaultIdentity()

// ours reports whether e is a node this process wrote.
func ours(e layout.Entry) bool {
	if e.PID != 0 {
		return e.PID == me.PID && e.Host == me.Host
	}
	return strings.HasPrefix(e.Identity, fmt.Sprintf("%s pid %d ", me.Host, me.PID))
}

// waitingLine says where this process waits in name's line and who holds
// it ("baton: waiting for lock NAME: 2nd in line (1 ahead); held by HOST
// pid 123 (baton lock NAME)"), how many contenders are ahead (or in line,
// when it is not yet), and whether it waits there (it may hold name
// already, or not be in line yet). On a terminal it adds how long
// the holder has held and its TTL left; in lines printed per change
// (-v), those would make a line a second.
func waitingLine(name string, rep statusReport, tty bool) (string, int, bool) {
	ahead, pos := 0, 0
	var holders []string
	seen := map[string]bool{}
	for _, e := range rep.Entries {
		switch e.Role {
		case layout.RoleHolder, layout.RoleLeader, layout.RoleWaiter, layout.RoleCandidate, layout.RoleAcquiring:
		default:
			continue
		}
		// Redlock lists each contender once per server.
		key := e.Session + "\x00" + e.Identity
		if e.Session != "" && seen[key] {
			continue
		}
		seen[key] = true
		if ours(e) {
			if e.Role == layout.RoleHolder || e.Role == layout.RoleLeader {
				return "", 0, false
			}
			pos = ahead + 1
			break
		}
		if e.Role == layout.RoleHolder || e.Role == layout.RoleLeader {
			holders = append(holders, holderText(e, tty))
		}
		ahead++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "baton: waiting for lock %s: ", name)
	if pos > 0 {
		fmt.Fprintf(&b, "%s in line (%d ahead)", ordinal(pos), ahead)
	} else {
		fmt.Fprintf(&b, "joining the line (%d in it)", ahead)
	}
	switch len(holders) {
	case 0:
		b.WriteString("; nobody holds it")
	case 1:
		fmt.Fprintf(&b, "; held by %s", holders[0])
	default:
		fmt.Fprintf(&b, "; held by %d: %s", len(holders), strings.Join(holders, ", "))
	}
	if n := spellingNote(rep); n != "" {
		b.WriteString("; " + n)
	}
	return b.String(), ahead, pos > 0
}

// holderText names a holder: host, pid and command from baton's identity,
// else "foreign" and the peer; on a terminal with its age and TTL left.
func holderText(e layout.Entry, tty bool) string {
	s := e.Identity
	switch {
	case e.PID != 0:
		s = fmt.Sprintf("%s pid %d", e.Host, e.PID)
		if e.Cmd != "" {
			s += " (" + e.Cmd + ")"
		}
	case e.Peer != "" && e.Peer != layout.PeerBaton:
		s += " (" + e.Peer + ")"
	}
	if tty {
		if e.Age >= 0 {
			s += fmt.Sprintf(" for %v", e.Age.Round(time.Second))
		}
		if e.TTL >= 0 {
			s += fmt.Sprintf(", TTL %v", e.TTL.Round(100*time.Millisecond))
		}
	}
	return s
}

// ordinal is 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, 21st, ….
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
