package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/redis"
)

// On Redis an inspector lists baton's locks under a prefix (keys K with
// K:token or K:queue, or holding a baton value) and reads each one's
// holder and line on every server. Redis keeps no watches a reader could
// use without taking part in a lock's hand-off: Wait learns of changes
// through keyspace notifications when every server has them on for keys,
// strings, generic commands, expiry and sorted sets (notify-keyspace-events
// with K and A, or K, g, $, x and z), and otherwise re-reads every
// redisPoll; a NameReader's own Wait re-reads every namePoll.
const (
	redisPoll = 500 * time.Millisecond
	namePoll  = 250 * time.Millisecond
)

// redisInspector reads a Redis store's servers, over one client per
// server kept until Close.
type redisInspector struct {
	u URL
	o Options

	mu      sync.Mutex
	rin     *RedisInspector
	reached bool   // every server answered a PING once
	live    string // LiveNotifications or LivePolling, once known
}

// Connect makes the servers' clients and, until every server has answered
// once, PINGs them: a store that cannot be reached fails here, at first,
// as a store with sessions fails to open.
func (in *redisInspector) Connect(ctx context.Context) (bool, error) {
	rin, err := in.servers()
	if err != nil {
		return false, err
	}
	in.mu.Lock()
	reached := in.reached
	in.mu.Unlock()
	if reached {
		return false, nil
	}
	if err := rin.each(ctx, func(ctx context.Context, _ int, c *goredis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		return false, err
	}
	in.mu.Lock()
	in.reached = true
	in.mu.Unlock()
	return false, nil
}

// servers returns the servers' reader, made when first needed (no I/O).
func (in *redisInspector) servers() (*RedisInspector, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.rin != nil {
		return in.rin, nil
	}
	rin, err := NewRedisInspector(in.u, in.o)
	if err != nil {
		return nil, err
	}
	in.rin = rin
	return rin, nil
}

func (in *redisInspector) Close(context.Context) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.rin != nil {
		in.rin.Close()
	}
}

func (in *redisInspector) Conn(context.Context) (backend.Conn, error) { return nil, ErrReadOnly }

func (in *redisInspector) Name(name string) NameReader {
	return &redisName{u: in.u, name: name, inspect: func(ctx context.Context, name string) ([]RedisLock, error) {
		rin, err := in.servers()
		if err != nil {
			return nil, err
		}
		return rin.Inspect(ctx, name)
	}}
}

func (k redisKind) glance(s *Store, name string, _ bool) Glance {
	return &redisName{u: s.URL, name: name, inspect: func(ctx context.Context, name string) ([]RedisLock, error) {
		return InspectRedis(ctx, s.URL, name, s.opts)
	}}
}

func (in *redisInspector) List(ctx context.Context, prefix string, limit int) (*Listing, error) {
	rin, err := in.servers()
	if err != nil {
		return nil, err
	}
	l := &Listing{prefix: prefix, limit: limit}
	l.Names, l.More, err = rin.Names(ctx, prefix, limit)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Live is LiveNotifications if every server has keyspace notifications
// on (asked once), else LivePolling.
func (in *redisInspector) Live(ctx context.Context) string {
	in.mu.Lock()
	mode, rin := in.live, in.rin
	in.mu.Unlock()
	if mode != "" || rin == nil {
		return mode
	}
	mode = LiveNotifications
	for _, c := range rin.Clients() {
		cctx, cancel := context.WithTimeout(ctx, in.o.DialTimeout)
		cfg, err := c.ConfigGet(cctx, "notify-keyspace-events").Result()
		cancel()
		if err != nil || !keyspaceOn(cfg["notify-keyspace-events"]) {
			mode = LivePolling
			break
		}
	}
	in.mu.Lock()
	in.live = mode
	in.mu.Unlock()
	return mode
}

// keyspaceOn says whether flags (notify-keyspace-events) publish keyspace
// events for every command a lock's hand-off uses.
func keyspaceOn(flags string) bool {
	if !strings.Contains(flags, "K") {
		return false
	}
	if strings.Contains(flags, "A") {
		return true
	}
	for _, f := range "g$xz" {
		if !strings.ContainsRune(flags, f) {
			return false
		}
	}
	return true
}

// Wait returns on a keyspace event under the prefix on any server, or
// (polling) once a read differs from l and names' last reads.
func (in *redisInspector) Wait(ctx context.Context, l *Listing, names []NameReader) error {
	rin, err := in.servers()
	if err != nil {
		return err
	}
	in.mu.Lock()
	mode := in.live
	in.mu.Unlock()
	if mode != LiveNotifications {
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(redisPoll):
			}
			if in.changed(ctx, rin, l, names) {
				return nil
			}
		}
	}
	var subs []*goredis.PubSub
	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		for _, s := range subs {
			_ = s.Close()
		}
	}()
	event := make(chan struct{}, 1)
	for _, c := range rin.Clients() {
		s := c.PSubscribe(ctx, "__keyspace@*__:"+EscapeGlob(l.prefix)+"*")
		if _, err := s.Receive(ctx); err != nil { // the subscription's confirmation
			_ = s.Close()
			return err
		}
		subs = append(subs, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.ReceiveMessage(ctx); err == nil {
				select {
				case event <- struct{}{}:
				default:
				}
			}
		}()
	}
	// A change between the read and the subscriptions is not missed.
	if in.changed(ctx, rin, l, names) {
		return nil
	}
	select {
	case <-event:
	case <-ctx.Done():
	}
	return nil
}

// changed reads the names under l's prefix and what each of names holds
// again, and says whether anything differs from the last reads (a read
// that fails counts as a change).
func (in *redisInspector) changed(ctx context.Context, rin *RedisInspector, l *Listing, names []NameReader) bool {
	got, more, err := rin.Names(ctx, l.prefix, l.limit)
	if err != nil || more != l.More || !slices.Equal(got, l.Names) {
		return ctx.Err() == nil
	}
	for _, n := range names {
		if r, ok := n.(*redisName); ok && r.changed(ctx) {
			return ctx.Err() == nil
		}
	}
	return false
}

// redisName reads a lock on every Redis server.
type redisName struct {
	u       URL
	name    string
	inspect func(ctx context.Context, name string) ([]RedisLock, error)
	last    string // the last read, for Wait (sameRedis)
}

func (r *redisName) Read(ctx context.Context) (layout.Report, error) {
	locks, err := r.inspect(ctx, r.name)
	if err != nil {
		return layout.Report{}, err
	}
	rep := DescribeRedis(r.name, r.u, locks, time.Now())
	r.last = steady(rep)
	return rep, nil
}

func (r *redisName) Other(ctx context.Context) (string, layout.Report, bool) {
	other := r.u.otherSpelling(r.name)
	if other == "" {
		return "", layout.Report{}, false
	}
	locks, err := r.inspect(ctx, other)
	if err != nil {
		return "", layout.Report{}, false
	}
	return other, DescribeRedis(other, r.u, locks, time.Now()), true
}

// Wait polls.
func (r *redisName) Wait(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(namePoll):
		}
		locks, err := r.inspect(ctx, r.name)
		if err != nil {
			return err
		}
		if steady(DescribeRedis(r.name, r.u, locks, time.Now())) != r.last {
			return nil
		}
	}
}

// changed reads the lock again and says whether it differs from the last
// read.
func (r *redisName) changed(ctx context.Context) bool {
	locks, err := r.inspect(ctx, r.name)
	return err != nil || steady(DescribeRedis(r.name, r.u, locks, time.Now())) != r.last
}

// steady is rep without its TTLs and ages, which change with the clock:
// a change in it is a change of holder or line.
func steady(rep layout.Report) string {
	rep.Entries = slices.Clone(rep.Entries)
	for i := range rep.Entries {
		rep.Entries[i].TTL, rep.Entries[i].Age = 0, 0
	}
	b, _ := json.Marshal(rep)
	return string(b)
}

// DescribeRedis lists each server's holder and waiters of a Redis lock
// name on the store at u; on Redlock a holder counts once it holds a
// majority of the servers.
func DescribeRedis(name string, u URL, locks []RedisLock, now time.Time) layout.Report {
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
				Role: layout.RoleWaiter, TTL: -1, Seq: int64(i + 1), Kind: backend.KindLock, Node: l.LineKey(key) + "@" + l.Server}, w, now))
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
	return rep
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
		if BatonValue(v) {
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
