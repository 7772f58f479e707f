package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// otherSpelling is what NAME's other spelling (with or without its
// leading "/") holds, on a store where the two are two locks (etcd, Redis:
// names are kept as written, baton.CleanName). baton before that rule
// took NAME as /NAME on every store, so a lock, election or queue an
// older baton made for NAME is found there.
type otherSpelling struct {
	Name    string `json:"name"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
	// Nodes counts every node there (holders, waiters, items, …);
	// Barrier says the name is a set barrier.
	Nodes   int  `json:"nodes"`
	Barrier bool `json:"barrier_set,omitempty"`
	// Holder names the first holder, as `lock -v` names a holder.
	Holder string `json:"holder,omitempty"`
}

// spellingOf is name with its leading "/" taken off or added: the other
// spelling, or "" if that is no name (too long).
func spellingOf(name string) string {
	other, ok := strings.CutPrefix(name, "/")
	if !ok {
		other = "/" + name
	}
	if _, err := baton.CleanName(other); err != nil {
		return ""
	}
	return other
}

// spellingFrom describes rep, the report of other, if anything is there.
func spellingFrom(other string, rep layout.Report) *otherSpelling {
	if len(rep.Entries) == 0 && !rep.BarrierSet {
		return nil
	}
	o := &otherSpelling{Name: other, Holders: rep.Holders, Waiters: rep.Waiters, Nodes: len(rep.Entries), Barrier: rep.BarrierSet}
	for _, e := range rep.Entries {
		if e.Role == layout.RoleHolder || e.Role == layout.RoleLeader {
			o.Holder = holderText(e, false)
			break
		}
	}
	return o
}

// otherOf reads the other spelling of r.name, on a store where it names
// another lock (not ZooKeeper), or nil. A failed read is no note.
func (r *sessionSource) otherOf(ctx context.Context) *otherSpelling {
	other := spellingOf(r.name)
	if other == "" || r.kind() == layout.StoreZooKeeper {
		return nil
	}
	l, err := layout.Read(ctx, r.s.Session.Conn(), r.kind(), other)
	if err != nil {
		return nil
	}
	return spellingFrom(other, layout.Describe(l, time.Now()))
}

// otherOf reads the other spelling of r.name, another Redis key, or nil.
func (r *redisSource) otherOf(ctx context.Context) *otherSpelling {
	other := spellingOf(r.name)
	if other == "" {
		return nil
	}
	locks, err := store.InspectRedis(ctx, r.u, other, r.o)
	if err != nil {
		return nil
	}
	return spellingFrom(other, describeRedis(other, r.u, locks, time.Now()).Report)
}

// spellingNote is the line status and `lock -v` show about rep's other
// spelling, or "".
func spellingNote(rep statusReport) string {
	o := rep.Other
	if o == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "note: %s (the other spelling of %s) ", o.Name, rep.Name)
	switch {
	case o.Holder != "":
		fmt.Fprintf(&b, "is held by %s", o.Holder)
		if o.Waiters > 0 {
			fmt.Fprintf(&b, ", %d waiting", o.Waiters)
		}
	case o.Holders > 0:
		fmt.Fprintf(&b, "is held, %d waiting", o.Waiters)
	case o.Waiters > 0:
		fmt.Fprintf(&b, "is waited on by %d", o.Waiters)
	case o.Nodes > 0:
		fmt.Fprintf(&b, "has %d nodes", o.Nodes)
	default:
		b.WriteString("is a set barrier")
	}
	b.WriteString("; on this store that is another lock")
	if !strings.HasPrefix(rep.Name, "/") {
		fmt.Fprintf(&b, " (baton before names were kept as written took %s as %s)", rep.Name, o.Name)
	}
	return b.String()
}
