package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// Bounds on the work one page costs the server, whatever the prefix holds.
const (
	PerPage    = 25               // instances per page: each one is read with layout.Read
	MaxPerPage = 100              // the most a page may ask for (?per_page=)
	MaxEntries = 50               // nodes shown per instance; the rest are counted
	readers    = 8                // names of a page read at once
	maxNames   = 1e5              // names listed under the prefix (ZooKeeper children, etcd keys)
	refresh    = 10 * time.Second // a page is re-read this often without a change (ages, TTLs)
)

// View is the page's data: one page of the instances under the prefix.
type View struct {
	Store     string     `json:"store"`
	Prefix    string     `json:"prefix"`
	Admin     bool       `json:"admin"`
	Page      int        `json:"page"`
	Pages     int        `json:"pages"`
	PerPage   int        `json:"per_page"`
	Total     int        `json:"total"`
	Truncated bool       `json:"truncated,omitempty"`
	Error     string     `json:"error,omitempty"`
	Live      string     `json:"live"` // how changes reach the page
	At        time.Time  `json:"at"`
	Instances []Instance `json:"instances"`
}

// Instance is one name's report, with at most MaxEntries nodes.
type Instance struct {
	layout.Report
	More  int        `json:"more,omitempty"`
	Error string     `json:"error,omitempty"`
	Chart *ChartView `json:"chart,omitempty"` // nil: no acquisition seen lately
}

// reader reads the store for the page, through the store's inspector:
// its session is opened when first needed and again after it ends, so a
// store that is down at start or goes away shows as an error on the page
// until it is back.
type reader struct {
	u      store.URL
	in     store.Inspector
	dial   time.Duration
	prefix string
	admin  bool
	chart  *chart
}

func (b *reader) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	b.in.Close(ctx)
}

// snapshot is a view with what the server needs to wait for its change.
type snapshot struct {
	view    View
	listing *store.Listing     // the names under the prefix, as listed
	srcs    []store.NameReader // the page's names, to watch
}

// read reads one page: the names under the prefix, then each name on the
// page. An unreadable store is the view's Error.
func (b *reader) read(ctx context.Context, page, per int) *snapshot {
	if per <= 0 {
		per = PerPage
	}
	per = min(per, MaxPerPage)
	snap := &snapshot{view: View{Store: b.u.String(), Prefix: b.prefix, Admin: b.admin, PerPage: per,
		Live: LiveWatches, At: time.Now(), Instances: []Instance{}}}
	v := &snap.view
	rctx, cancel := context.WithTimeout(ctx, b.dial+3*time.Second)
	defer cancel()
	// The session first: opening it names why a store cannot be reached
	// (refused, no route, TLS wanted) within --dial-timeout, where etcd's
	// listing would wait out its deadline and say only that it passed.
	_, err := b.in.Connect(rctx)
	if err == nil {
		v.Live = b.in.Live(rctx)
		snap.listing, err = b.in.List(rctx, b.prefix, maxNames)
	}
	if err != nil {
		v.Error = fmt.Sprintf("cannot read %s under %q: %v", v.Store, b.prefix, err)
		return snap
	}
	v.Truncated = snap.listing.More
	names := b.paginate(v, snap.listing.Names, page, per)
	// The names are read readers at a time: each is several requests
	// (one a directory), and a page read one name after another spends
	// most of its time waiting for replies.
	srcs := make([]store.NameReader, len(names))
	reps := make([]layout.Report, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	turns := make(chan struct{}, readers)
	for i, name := range names {
		srcs[i] = b.in.Name(name)
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer func() { <-turns; wg.Done() }()
			reps[i], errs[i] = srcs[i].Read(rctx)
		}()
	}
	wg.Wait()
	for i, name := range names {
		inst := Instance{Report: reps[i]}
		inst.Name = name
		if errs[i] != nil {
			inst.Error = errs[i].Error()
		} else {
			snap.srcs = append(snap.srcs, srcs[i])
			b.chart.observe(name, inst.Entries, v.At)
		}
		inst.Chart = b.chart.view(name, time.Now())
		if n := len(inst.Entries); n > MaxEntries {
			inst.Entries, inst.More = inst.Entries[:MaxEntries], n-MaxEntries
		}
		v.Instances = append(v.Instances, inst)
	}
	return snap
}

// paginate sets v's counts and returns the names on its page.
func (b *reader) paginate(v *View, names []string, page, per int) []string {
	v.Total = len(names)
	v.Pages = max(1, (len(names)+per-1)/per)
	v.Page = min(max(page, 1), v.Pages)
	from := (v.Page - 1) * per
	return names[from:min(from+per, len(names))]
}

// wait returns when something the snapshot shows may have changed, as
// the store's inspector learns of it (Inspector.Wait). It also returns
// after refresh (ages and TTLs move), and soon after an error (the store
// is retried).
func (b *reader) wait(ctx context.Context, snap *snapshot) error {
	ctx, cancel := context.WithTimeout(ctx, refresh)
	defer cancel()
	if snap.view.Error != "" {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // retry a failed store
		}
		return nil
	}
	return b.in.Wait(ctx, snap.listing, snap.srcs)
}
