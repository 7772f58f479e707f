package redistest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
)

// A client of SentinelVia's URL reaches the master through the proxy and
// loses it when the proxy is cut, while the topology's sentinel goes on
// naming the master itself and knows no master ViaName.
func TestSentinelVia(t *testing.T) {
	tp := redistest.StartSentinel(t, 1, 1)
	master := tp.MasterAddr()
	px := proxy.Start(t, master)
	url := tp.SentinelVia(t, px.Addr())
	rest, ok := strings.CutPrefix(url, "redis-sentinel://")
	addr, name, _ := strings.Cut(rest, "/")
	if !ok || name != redistest.ViaName {
		t.Fatalf("URL %q, want redis-sentinel://h:p/%s", url, redistest.ViaName)
	}
	opt := &goredis.FailoverOptions{MasterName: name, SentinelAddrs: []string{addr}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: opt.SentinelAddrs[0]})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, redistest.ViaName).Result()
	if err != nil || len(a) != 2 || a[0]+":"+a[1] != px.Addr() {
		t.Fatalf("the via sentinel names %v (%v), want the proxy %s", a, err, px.Addr())
	}
	rc := goredis.NewFailoverClient(opt)
	defer rc.Close()
	if err := rc.Set(ctx, "via", "1", 0).Err(); err != nil {
		t.Fatalf("SET through the via sentinel: %v", err)
	}
	direct := goredis.NewClient(&goredis.Options{Addr: master})
	defer direct.Close()
	if v, err := direct.Get(ctx, "via").Result(); err != nil || v != "1" {
		t.Fatalf("the master has via = %q (%v), want 1", v, err)
	}
	px.Cut()
	if err := rc.Get(ctx, "via").Err(); err == nil {
		t.Fatal("GET through the cut proxy succeeded")
	}
	if got := tp.MasterAddr(); got != master {
		t.Errorf("the topology's sentinel names %q, want %q", got, master)
	}
	ts := goredis.NewSentinelClient(&goredis.Options{Addr: tp.Sentinels[0].Addr()})
	defer ts.Close()
	if a, err := ts.GetMasterAddrByName(ctx, redistest.ViaName).Result(); !errors.Is(err, goredis.Nil) {
		t.Errorf("the topology's sentinel names master %s: %v, %v", redistest.ViaName, a, err)
	}
}
