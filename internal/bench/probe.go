package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/fourletter"
)

// probeTimeout bounds one probe read of one server.
const probeTimeout = 5 * time.Second

// ZKProbe reads ZooKeeper's mntr four-letter word on every server
// (4lw.commands.whitelist must allow it). Requests is the sum of
// zk_packets_received, less the one packet each mntr read itself counts;
// it includes session pings. Fires is the sum of the watches the servers
// triggered (zk_sum_node_{created,deleted,changed,children}_watch_count),
// and Watches zk_watch_count.
type ZKProbe struct{ Hosts []string }

// Sample reads every server once.
func (p ZKProbe) Sample(ctx context.Context) (Counters, error) {
	c := Counters{HasFires: true, HasWatches: true}
	for _, h := range p.Hosts {
		out, err := fourLetter(ctx, h, "mntr")
		if err != nil {
			return Counters{}, err
		}
		m := parseFields(out, "\t")
		pk, ok := m["zk_packets_received"]
		if !ok {
			return Counters{}, fmt.Errorf("bench: mntr on %s: no zk_packets_received (is 4lw mntr allowed?)", h)
		}
		c.Requests += int64(pk) - 1
		c.Watches += int64(m["zk_watch_count"])
		for _, k := range []string{"created", "deleted", "changed", "children"} {
			c.Fires += int64(m["zk_sum_node_"+k+"_watch_count"])
		}
	}
	return c, nil
}

// fourLetter sends a ZooKeeper four-letter word and returns the reply.
func fourLetter(ctx context.Context, host, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return fourletter.Ask(ctx, host, cmd)
}

// parseFields parses "name<sep>value" lines into numbers, skipping the rest.
func parseFields(s, sep string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), sep)
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			m[strings.TrimSpace(k)] = f
		}
	}
	return m
}

// EtcdProbe reads the Prometheus /metrics page of every etcd server (on
// the client URL). Requests is the sum of grpc_server_msg_received_total
// over all methods: unary requests plus every message clients sent on
// streams (watch creations and cancels, lease keep-alives). Fires is
// etcd_debugging_mvcc_events_total, the events sent to watchers, and
// Watches etcd_debugging_mvcc_watcher_total.
type EtcdProbe struct {
	// URLs are the servers' client URLs (http://host:port).
	URLs []string
}

// Sample reads every server once.
func (p EtcdProbe) Sample(ctx context.Context) (Counters, error) {
	c := Counters{HasFires: true, HasWatches: true}
	for _, u := range p.URLs {
		body, err := httpGet(ctx, strings.TrimSuffix(u, "/")+"/metrics")
		if err != nil {
			return Counters{}, err
		}
		found := false
		for _, line := range strings.Split(body, "\n") {
			name, val, ok := metricLine(line)
			if !ok {
				continue
			}
			switch name {
			case "grpc_server_msg_received_total":
				c.Requests += int64(val)
				found = true
			case "etcd_debugging_mvcc_events_total":
				c.Fires += int64(val)
			case "etcd_debugging_mvcc_watcher_total":
				c.Watches += int64(val)
			}
		}
		if !found {
			return Counters{}, fmt.Errorf("bench: %s/metrics has no grpc_server_msg_received_total", u)
		}
	}
	return c, nil
}

// metricLine splits a Prometheus text line into its name (labels dropped)
// and value.
func metricLine(line string) (string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return "", 0, false
	}
	name := line[:i]
	if j := strings.IndexByte(name, '{'); j >= 0 {
		name = name[:j]
	}
	return name, v, true
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("bench: GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// RedisProbe reads INFO stats and INFO commandstats on every server.
// Requests is the sum of the commandstats calls of every command, the
// commands run inside scripts included (as the server counts them), less
// the probe's own INFO (and AUTH) of earlier samples. RoundTrips is the
// sum of total_reads_processed, the reads of client requests off the
// sockets, less the probe's own (its INFO, AUTH and closing read of each
// sample): requests a client sent, a script counting once. Redis has no
// watches: HasFires is false.
type RedisProbe struct {
	// Addrs are host:port.
	Addrs []string
	// Password authenticates, if set.
	Password string

	samples int64
}

// Sample reads every server once.
func (p *RedisProbe) Sample(ctx context.Context) (Counters, error) {
	c := Counters{HasRoundTrips: true}
	for _, a := range p.Addrs {
		out, err := redisInfo(ctx, a, p.Password)
		if err != nil {
			return Counters{}, err
		}
		f := parseFields(out, ":")
		reads, ok := f["total_reads_processed"]
		if !ok {
			return Counters{}, fmt.Errorf("bench: INFO on %s: no total_reads_processed", a)
		}
		var calls int64
		for line := range strings.SplitSeq(out, "\n") {
			if _, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls="); ok && strings.HasPrefix(line, "cmdstat_") {
				n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
				calls += n
			}
		}
		if calls == 0 {
			return Counters{}, fmt.Errorf("bench: INFO on %s: no commandstats", a)
		}
		own := p.samples // the INFO of each earlier sample
		ownReads := 2*p.samples + 1
		if p.Password != "" {
			own += p.samples
			ownReads += p.samples + 1
		}
		c.Requests += calls - own
		c.RoundTrips += int64(reads) - ownReads
	}
	p.samples++
	return c, nil
}

// redisInfo runs INFO stats commandstats over a fresh connection with raw
// RESP.
func redisInfo(ctx context.Context, addr, password string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	rd := bufio.NewReader(conn)
	if password != "" {
		if _, err := fmt.Fprintf(conn, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(line, "+OK") {
			return "", fmt.Errorf("bench: AUTH on %s: %s", addr, strings.TrimSpace(line))
		}
	}
	if _, err := io.WriteString(conn, "*3\r\n$4\r\nINFO\r\n$5\r\nstats\r\n$12\r\ncommandstats\r\n"); err != nil {
		return "", err
	}
	head, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(head, "$") {
		return "", fmt.Errorf("bench: INFO on %s: %s", addr, strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd, b); err != nil {
		return "", err
	}
	return string(b), nil
}
