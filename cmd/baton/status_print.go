package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

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
	printAdvisory(w, rep.Advisory, time.Now())
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
