package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// wrapMargin is how close to the signed 32-bit limit a ZooKeeper sequence
// may get before status calls it unsafe.
const wrapMargin = 1 << 20

// statusNode is one row of `baton status`.
type statusNode struct {
	Pos     int      `json:"pos"`
	Role    string   `json:"role"`
	Session string   `json:"session,omitempty"`
	Age     string   `json:"age,omitempty"`
	AgeMS   int64    `json:"age_ms,omitempty"`
	Token   int64    `json:"token"`
	Seq     int64    `json:"seq"`
	Kind    string   `json:"kind"`
	Node    string   `json:"node"`
	Flags   []string `json:"flags,omitempty"`
}

// statusReport is `baton status --json`'s output.
type statusReport struct {
	Name    string       `json:"name"`
	Store   string       `json:"store"`
	Holders int          `json:"holders"`
	Waiters int          `json:"waiters"`
	Nodes   []statusNode `json:"nodes"`
}

// status is `baton status [flags] [--json] NAME`.
func (m *Main) status(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("status", "status [--store URL] [--json] NAME", &sf, false)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	name, err := oneName(fs, pos)
	if err != nil {
		return err
	}
	sf.name = name
	u, err := sf.parse()
	if err != nil {
		return err
	}
	var rep statusReport
	if !u.HasSessions() {
		locks, err := store.InspectRedis(ctx, u, name, sf.options())
		if errors.Is(err, store.ErrBadTLS) {
			return usageErr("%v", err)
		}
		if err != nil {
			return err
		}
		rep = describeRedis(name, u, locks)
	} else {
		s, err := m.open(ctx, &sf)
		if err != nil {
			return err
		}
		defer closeStore(s)
		lctx, cancel := context.WithTimeout(ctx, sf.dial)
		defer cancel()
		kids, err := listNodes(lctx, s.Session.Conn(), name)
		if err != nil {
			return fmt.Errorf("status %s: %w", name, err)
		}
		rep = describe(name, s.URL, kids, time.Now())
	}
	if *asJSON {
		enc := json.NewEncoder(m.Stdout)
		return enc.Encode(rep)
	}
	m.printStatus(rep)
	return nil
}

// listNodes lists name's children in order, reading each node whose
// listing lacks its owner, token or age (ZooKeeper lists names only).
// A node gone in between is left out.
func listNodes(ctx context.Context, c baton.Conn, name string) ([]baton.Node, error) {
	kids, err := c.Children(ctx, name)
	if err != nil {
		return nil, err
	}
	out := kids[:0]
	for _, k := range kids {
		if k.Token == 0 || k.Created.IsZero() {
			_, n, err := c.Get(ctx, k.Path)
			if errors.Is(err, baton.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			k.Token, k.Owner = n.Token, n.Owner
			if k.Created.IsZero() {
				k.Created = n.Created
			}
		}
		out = append(out, k)
	}
	return out, nil
}

// describe assigns roles in order: who holds, who waits, and what looks
// foreign or unsafe.
func describe(name string, u store.URL, kids []baton.Node, now time.Time) statusReport {
	rep := statusReport{Name: name, Store: u.String(), Nodes: []statusNode{}}
	curator := false
	for _, k := range kids {
		if strings.HasPrefix(k.Name, "_c_") {
			curator = true
		}
	}
	var lockSeen, writeSeen, anySeen, latchSeen bool
	for i, k := range kids {
		n := statusNode{Pos: i + 1, Session: k.Owner, Token: k.Token, Seq: k.Seq, Kind: k.Kind, Node: k.Path}
		if !k.Created.IsZero() {
			age := now.Sub(k.Created)
			n.AgeMS = age.Milliseconds()
			n.Age = age.Round(100 * time.Millisecond).String()
		}
		switch k.Kind {
		case baton.KindLock:
			n.Role = ifElse(lockSeen, "waiter", "holder")
			lockSeen = true
		case baton.KindWrite:
			n.Role = ifElse(anySeen, "waiter", "holder")
			writeSeen = true
		case baton.KindRead:
			n.Role = ifElse(writeSeen, "waiter", "holder")
		case baton.KindLatch:
			n.Role = ifElse(latchSeen, "candidate", "leader")
			latchSeen = true
		case baton.KindLease:
			n.Role = "lease"
		case baton.KindQueue:
			n.Role = "item"
		case "":
			n.Role = "foreign"
			n.Flags = append(n.Flags, "foreign: no recipe recognises this node; it is ignored")
		default:
			n.Role = "node"
		}
		if k.Kind == baton.KindRead || k.Kind == baton.KindWrite || k.Kind == baton.KindLock {
			anySeen = true
		}
		if strings.Contains(k.Name, "__lock__") || strings.Contains(k.Name, "__rlock__") {
			f := "kazoo node"
			if curator {
				// kazoo counts only "__lock__" names as contenders: it does
				// not wait for Curator-layout nodes, so both may hold.
				f = "unsafe: kazoo node under a Curator-layout path (kazoo ignores Curator nodes, so both may hold)"
			}
			n.Flags = append(n.Flags, f)
		}
		if u.IsZooKeeper() {
			if f := wrapFlag(k.Name); f != "" {
				n.Flags = append(n.Flags, f)
			}
		}
		switch n.Role {
		case "holder", "leader":
			rep.Holders++
		case "waiter", "candidate":
			rep.Waiters++
		}
		rep.Nodes = append(rep.Nodes, n)
	}
	return rep
}

// describeRedis lists each server's holder and waiters of a Redis lock;
// on Redlock a holder counts once it holds a majority of the servers.
func describeRedis(name string, u store.URL, locks []store.RedisLock) statusReport {
	rep := statusReport{Name: name, Store: u.String(), Nodes: []statusNode{}}
	votes := map[string]int{}
	waiting := map[string]bool{}
	for _, l := range locks {
		if l.Holder != "" {
			votes[l.Holder]++
			rep.Nodes = append(rep.Nodes, statusNode{Pos: len(rep.Nodes) + 1, Role: "holder", Session: l.Holder,
				Token: l.Token, Kind: baton.KindLock, Node: name + "@" + l.Server,
				Flags: []string{fmt.Sprintf("ttl %v left", l.Left.Round(time.Millisecond))}})
		}
		for i, w := range l.Waiters {
			waiting[w] = true
			rep.Nodes = append(rep.Nodes, statusNode{Pos: len(rep.Nodes) + 1, Role: "waiter", Session: w,
				Seq: int64(i + 1), Kind: baton.KindLock, Node: name + ":queue@" + l.Server})
		}
	}
	need := 1
	if u.Scheme == store.Redlock {
		need = len(locks)/2 + 1
	}
	for _, n := range votes {
		if n >= need {
			rep.Holders++
		}
	}
	rep.Waiters = len(waiting)
	return rep
}

// wrapFlag flags a ZooKeeper sequence (the name's last ten characters,
// printed by the server as %010d of a signed 32-bit counter) at or past
// the wrap.
func wrapFlag(name string) string {
	if len(name) < 10 {
		return ""
	}
	seq, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return ""
	}
	switch {
	case seq < 0 || seq > math.MaxInt32:
		return "unsafe: sequence wrapped past 2147483647"
	case seq > math.MaxInt32-wrapMargin:
		return fmt.Sprintf("unsafe: sequence %d is near the 32-bit wrap", seq)
	}
	return ""
}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func (m *Main) printStatus(rep statusReport) {
	fmt.Fprintf(m.Stdout, "%s on %s: %d holding, %d waiting\n", rep.Name, rep.Store, rep.Holders, rep.Waiters)
	if len(rep.Nodes) == 0 {
		fmt.Fprintln(m.Stdout, "  (no nodes)")
		return
	}
	tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tROLE\tSESSION\tAGE\tTOKEN\tNODE\tFLAGS")
	for _, n := range rep.Nodes {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d\t%s\t%s\n", n.Pos, n.Role, dash(n.Session), dash(n.Age), n.Token, n.Node, strings.Join(n.Flags, "; "))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
