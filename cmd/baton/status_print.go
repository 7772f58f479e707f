package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/redis"
)

// nodesOf returns the nodes of a directory's listing.
func nodesOf(kids []layout.Child) []backend.Node {
	out := make([]backend.Node, len(kids))
	for i, k := range kids {
		out[i] = k.Node
	}
	return out
}

// describeRedis lists each server's holder and waiters of a Redis lock;
// on Redlock a holder counts once it holds a majority of the servers.
func describeRedis(name string, u store.URL, locks []store.RedisLock, now time.Time) statusReport {
	rep := layout.Report{Name: name, Recipes: []string{}, Entries: []layout.Entry{}}
	key := redis.KeyOf(name) // the node column names the keys as redis-cli shows them
	votes := map[string]int{}
	waiting := map[string]bool{}
	for _, l := range locks {
		if !u.Fenced() {
			l.Token = 0 // Redlock: BATON_TOKEN is 0
		}
		if l.Holder != "" {
			votes[l.Holder]++
			rep.Entries = append(rep.Entries, redisEntry(layout.Entry{Pos: len(rep.Entries) + 1, Recipe: layout.RecipeMutex,
				Role: layout.RoleHolder, TTL: l.Left, Token: l.Token, Kind: backend.KindLock, Node: key + "@" + l.Server}, l.Holder, now))
		}
		for i, w := range l.Waiters {
			waiting[w] = true
			rep.Entries = append(rep.Entries, redisEntry(layout.Entry{Pos: len(rep.Entries) + 1, Recipe: layout.RecipeMutex,
				Role: layout.RoleWaiter, TTL: -1, Seq: int64(i + 1), Kind: backend.KindLock, Node: key + ":queue@" + l.Server}, w, now))
		}
	}
	if len(rep.Entries) > 0 {
		rep.Recipes = []string{layout.RecipeMutex}
	}
	for _, n := range votes {
		if n >= u.Majority() {
			rep.Holders++
		}
	}
	rep.Waiters = len(waiting)
	return statusReport{Store: u.String(), Held: rep.Held(), Report: rep}
}

// redisEntry is a Redis lock entry for value v (a holder's or a
// waiter's): its identity, host, pid, command and age where v carries
// baton's identity (redis.WithIdentity); a baton value without one (a
// library client's) is a "baton client", any other "foreign".
func redisEntry(e layout.Entry, v string, now time.Time) layout.Entry {
	e.Identity, e.Age = layout.IdentityForeign, -1
	e.Session, _, _ = strings.Cut(v, ".") // the random part: the identity follows
	id, ok := redis.ParseValue(v)
	if !ok {
		if store.BatonValue(v) {
			e.Identity, e.Peer = "baton client (its value carries no identity)", layout.PeerBaton
		}
		return e
	}
	e.Peer = layout.PeerBaton
	e.Identity = fmt.Sprintf("%s pid %d", id.Host, id.PID)
	if id.Cmd != "" {
		e.Identity += " " + id.Cmd
	}
	e.Host, e.PID, e.Cmd = id.Host, id.PID, id.Cmd
	if !id.Created.IsZero() {
		e.Age = max(now.Sub(id.Created), 0)
	}
	return e
}

// summary says what the name holds besides its holders and waiters.
func summary(r layout.Report) string {
	// A priority or delay queue's items are counted apart from the
	// others on the name (Report.Items counts them all).
	items := map[string]int{}
	for _, e := range r.Entries {
		if e.Role == layout.RoleItem && (e.Recipe == layout.RecipePriorityQueue || e.Recipe == layout.RecipeDelayQueue) {
			items[e.Recipe]++
		}
	}
	var parts []string
	for _, rc := range r.Recipes {
		switch rc {
		case layout.RecipeSemaphore, layout.RecipeKazooSemaphore:
			if r.Permits > 0 {
				rc += fmt.Sprintf(" of %d", r.Permits)
			}
		case layout.RecipeQueue, layout.RecipeReliableQueue, layout.RecipeKazooQueue, layout.RecipeKazooLocking, layout.RecipeCuratorQueue:
			rc += fmt.Sprintf(" (%d items", r.Items-items[layout.RecipePriorityQueue]-items[layout.RecipeDelayQueue])
			if r.Claimed > 0 {
				rc += fmt.Sprintf(", %d claimed", r.Claimed)
			}
			rc += ")"
		case layout.RecipePriorityQueue, layout.RecipeDelayQueue:
			rc += fmt.Sprintf(" (%d items)", items[rc])
		case layout.RecipeBarrier:
			rc += " (set)"
		case layout.RecipeDoubleBarrier:
			rc += fmt.Sprintf(" (%d in, %s)", r.Participants, ifElse(r.Open, "open", "not open"))
		}
		parts = append(parts, rc)
	}
	return strings.Join(parts, ", ")
}

func printStatus(w io.Writer, rep statusReport) {
	fmt.Fprintf(w, "%s on %s: %d holding, %d waiting\n", rep.Name, rep.Store, rep.Holders, rep.Waiters)
	if s := summary(rep.Report); s != "" {
		fmt.Fprintf(w, "  %s\n", s)
	}
	if n := spellingNote(rep); n != "" {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for _, x := range rep.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if len(rep.Entries) == 0 {
		fmt.Fprintln(w, "  (no nodes)")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tROLE\tIDENTITY\tAGE\tTTL\tTOKEN\tNODE\tFLAGS")
	for _, n := range rep.Entries {
		id := n.Identity
		// The peer names the layout: a peer's, or baton's own for a node
		// that carries no identity.
		if n.Peer != "" && (n.Peer != layout.PeerBaton || n.Identity == layout.IdentityUnknown) {
			id += " (" + n.Peer + ")"
		}
		if n.Value != "" {
			id += " value=" + n.Value
		}
		if n.Priority != nil {
			id += fmt.Sprintf(" priority=%d", *n.Priority)
		}
		if n.Due != nil {
			id += " due=" + n.Due.Format(time.RFC3339)
			if left := time.Until(*n.Due); left > 0 {
				id += " (in " + left.Round(time.Second).String() + ")"
			}
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", n.Pos, n.Role, id, age(n.Age), ttl(n), n.Token, n.Node, strings.Join(n.Flags, "; "))
	}
	tw.Flush()
}

func age(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.Round(100 * time.Millisecond).String()
}

func ttl(n layout.Entry) string {
	switch {
	case n.TTL < 0:
		return "-"
	case n.TTLBound:
		return "≤" + n.TTL.Round(time.Millisecond).String()
	}
	return n.TTL.Round(time.Millisecond).String()
}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
