package main

import (
	"context"
	"fmt"
	"strings"

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

// otherOf describes what g's other spelling holds, where the store keeps
// it as another lock and something is there, or nil. A failed read is no
// note.
func otherOf(ctx context.Context, g store.Glance) *otherSpelling {
	other, rep, ok := g.Other(ctx)
	if !ok {
		return nil
	}
	return spellingFrom(other, rep)
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
