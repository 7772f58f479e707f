package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/store"
)

// gatewayTTL is the lease TTL of a gateway client, renewed every third.
const gatewayTTL = 10

// GatewayTarget is etcd's server-side lock (v3lock) driven over its
// HTTP/JSON gateway, as a program in any language would: one lease per
// client, POST /v3/lock/lock and /v3/lock/unlock per cycle. The store at
// u must be etcd without TLS or authentication.
func GatewayTarget(u store.URL) (Target, error) {
	if u.Scheme != store.Etcd || u.User != "" {
		return Target{}, fmt.Errorf("bench: the gateway workload needs etcd:// without credentials, not %s", u)
	}
	var urls []string
	for _, h := range u.Hosts {
		urls = append(urls, "http://"+h)
	}
	return Target{Impl: "etcd-gateway", Store: StoreLabel(u), Factory: gatewayFactory{urls: urls}, Probe: EtcdProbe{URLs: urls}}, nil
}

type gatewayFactory struct{ urls []string }

var gatewayClients struct {
	mu sync.Mutex
	n  int
}

// Open grants a lease through one of the URLs (round robin over the
// clients opened) and keeps it alive until Close.
func (f gatewayFactory) Open(ctx context.Context) (Client, error) {
	gatewayClients.mu.Lock()
	base := f.urls[gatewayClients.n%len(f.urls)]
	gatewayClients.n++
	gatewayClients.mu.Unlock()
	c := &gatewayClient{base: base, http: &http.Client{Timeout: time.Minute}, stop: make(chan struct{}), done: make(chan struct{})}
	var g struct {
		ID string `json:"ID"`
	}
	if err := c.post(ctx, "/v3/lease/grant", map[string]any{"TTL": gatewayTTL}, &g); err != nil {
		return nil, err
	}
	c.lease = g.ID
	go c.keepAlive()
	return c, nil
}

type gatewayClient struct {
	base  string
	http  *http.Client
	lease string
	stop  chan struct{}
	done  chan struct{}
}

func (c *gatewayClient) keepAlive() {
	defer close(c.done)
	t := time.NewTicker(gatewayTTL * time.Second / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), gatewayTTL*time.Second/3)
		_ = c.post(ctx, "/v3/lease/keepalive", map[string]any{"ID": c.lease}, nil)
		cancel()
	}
}

// post sends body as JSON to path and decodes the answer into out.
func (c *gatewayClient) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("gateway %s: %s: %s", path, resp.Status, e.Message)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *gatewayClient) Locker(name string) Locker {
	return &gatewayLocker{c: c, name: base64.StdEncoding.EncodeToString([]byte(strings.TrimSuffix(name, "/")))}
}

func (c *gatewayClient) Close(ctx context.Context) error {
	close(c.stop)
	<-c.done
	return c.post(ctx, "/v3/lease/revoke", map[string]any{"ID": c.lease}, nil)
}

type gatewayLocker struct {
	c    *gatewayClient
	name string
	key  string
}

func (l *gatewayLocker) Lock(ctx context.Context) error {
	var r struct {
		Key string `json:"key"`
	}
	if err := l.c.post(ctx, "/v3/lock/lock", map[string]any{"name": l.name, "lease": l.c.lease}, &r); err != nil {
		return err
	}
	l.key = r.Key
	return nil
}

func (l *gatewayLocker) Unlock(ctx context.Context) error {
	return l.c.post(ctx, "/v3/lock/unlock", map[string]any{"key": l.key}, nil)
}
