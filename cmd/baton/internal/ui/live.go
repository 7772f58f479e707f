package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/store"
)

// On Redis the page lists baton's locks under the prefix (keys K with
// K:token or K:queue) and reads each one's holder and line on every
// server, as `baton status` does. Redis has no watches: the page is live
// through keyspace notifications when every server has them on for keys,
// strings, generic commands, expiry and sorted sets (notify-keyspace-events
// with K and A, or K, g, $, x and z), and otherwise re-reads the page every
// redisPoll and pushes it when it changed.
const redisPoll = 500 * time.Millisecond

// Live modes, shown on the page.
const (
	LiveWatches       = "store watches"
	LiveNotifications = "keyspace notifications"
	LivePolling       = "a read every 500 ms (no keyspace notifications)"
)

// inspector returns the Redis inspector, made when first needed.
func (b *reader) inspector() (*store.RedisInspector, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rin != nil {
		return b.rin, nil
	}
	in, err := store.NewRedisInspector(b.u, b.opts)
	if err != nil {
		return nil, err
	}
	b.rin = in
	return in, nil
}

// readRedis fills snap with one page of the Redis locks under the prefix.
func (b *reader) readRedis(ctx context.Context, snap *snapshot, page, per int) {
	v := &snap.view
	in, err := b.inspector()
	if err == nil {
		v.Live = b.liveMode(ctx, in)
	}
	var names []string
	if err == nil {
		names, v.Truncated, err = in.Names(ctx, b.prefix, maxNames)
	}
	if err != nil {
		v.Error = fmt.Sprintf("cannot read %s under %q: %v", v.Store, b.prefix, err)
		return
	}
	names = b.paginate(v, names, page, per)
	for _, name := range names {
		inst := Instance{}
		locks, err := in.Inspect(ctx, name)
		if err != nil {
			inst.Error = err.Error()
		} else {
			inst.Report = b.redisReport(name, locks, time.Now())
			b.chart.observe(name, inst.Entries, v.At)
		}
		inst.Name = name
		inst.Chart = b.chart.view(name, time.Now())
		v.Instances = append(v.Instances, inst)
	}
}

// liveMode says how the page learns of changes: keyspace notifications if
// every server has them on (asked once), else polling.
func (b *reader) liveMode(ctx context.Context, in *store.RedisInspector) string {
	b.mu.Lock()
	mode := b.live
	b.mu.Unlock()
	if mode != "" {
		return mode
	}
	mode = LiveNotifications
	for _, c := range in.Clients() {
		cctx, cancel := context.WithTimeout(ctx, b.dial)
		cfg, err := c.ConfigGet(cctx, "notify-keyspace-events").Result()
		cancel()
		if err != nil || !keyspaceOn(cfg["notify-keyspace-events"]) {
			mode = LivePolling
			break
		}
	}
	b.mu.Lock()
	b.live = mode
	b.mu.Unlock()
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

// waitRedis returns when the page may have changed: a keyspace event
// under the prefix on any server, or (polling) a read that differs; and
// after refresh in any case.
func (b *reader) waitRedis(ctx context.Context, snap *snapshot) error {
	page, per := snap.view.Page, snap.view.PerPage
	ctx, cancel := context.WithTimeout(ctx, refresh)
	defer cancel()
	in, err := b.inspector()
	if err != nil {
		return err
	}
	if snap.view.Live == LiveNotifications {
		var subs []*goredis.PubSub
		var wg sync.WaitGroup
		defer wg.Wait()
		defer func() {
			for _, s := range subs {
				_ = s.Close()
			}
		}()
		event := make(chan struct{}, 1)
		for _, c := range in.Clients() {
			s := c.PSubscribe(ctx, "__keyspace@*__:"+store.EscapeGlob(b.prefix)+"*")
			if _, err := s.Receive(ctx); err != nil { // the subscription's confirmation
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
		if redisState(b.read(ctx, page, per).view) != redisState(snap.view) {
			return nil
		}
		select {
		case <-event:
		case <-ctx.Done():
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(redisPoll):
		}
		if redisState(b.read(ctx, page, per).view) != redisState(snap.view) {
			return nil
		}
	}
}

// redisState is what a Redis page shows but for the TTLs, which count
// down: a change in it is worth pushing.
func redisState(v View) string {
	v.Instances = slices.Clone(v.Instances)
	for i := range v.Instances {
		inst := v.Instances[i]
		inst.Entries = append(inst.Entries[:0:0], inst.Entries...)
		for j := range inst.Entries {
			inst.Entries[j].TTL = 0
		}
		inst.Chart = nil
		v.Instances[i] = inst
	}
	v.At = time.Time{}
	b, _ := json.Marshal(v)
	return string(b)
}
