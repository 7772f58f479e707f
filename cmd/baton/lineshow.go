package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// clearLine returns a terminal's cursor to the start of a cleared line.
const clearLine = "\r\033[K"

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
		srcs := make([]statusSource, len(l.names))
		for i, n := range l.names {
			srcs[i] = sourceFor(s, n, l.sf)
		}
		var last string
		for ctx.Err() == nil {
			// The first name we wait for (several: the one MultiLock is at).
			var src statusSource
			msg := ""
			for i, src1 := range srcs {
				rep, err := src1.read(ctx)
				if err != nil {
					break
				}
				src = src1
				if m, waiting := waitingLine(l.names[i], rep, tty); waiting || i == len(srcs)-1 {
					msg = m
					break
				}
			}
			if msg != "" && msg != last {
				last = msg
				if tty {
					fmt.Fprint(l.m.Stderr, clearLine+msg)
					drawn = true
				} else {
					fmt.Fprintln(l.m.Stderr, msg)
				}
			}
			d := time.Second // a terminal shows ages: redraw each second
			if !tty {
				d = time.Minute // -v: a line per change
			}
			if src == nil {
				d = time.Second // a failed read: try again
			}
			wctx, wcancel := context.WithTimeout(ctx, d)
			if src != nil {
				_ = src.wait(wctx)
			} else {
				<-wctx.Done()
			}
			wcancel()
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

// sourceFor reads name on s for the wait display.
func sourceFor(s *store.Store, name string, sf *storeFlags) statusSource {
	if s.Session != nil {
		return &sessionSource{s: s, name: name, dial: sf.dial}
	}
	return &redisSource{u: s.URL, name: name, o: sf.options()}
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
// pid 123 (baton lock NAME)"), and whether it waits there (it may hold
// name already, or not be in line yet). On a terminal it adds how long
// the holder has held and its TTL left; in lines printed per change
// (-v), those would make a line a second.
func waitingLine(name string, rep statusReport, tty bool) (string, bool) {
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
				return "", false
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
	return b.String(), pos > 0
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
