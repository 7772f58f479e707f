package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/store"
)

// serveCluster are serve's cluster flags.
type serveCluster struct {
	name, listenPeer, advertise, initial, file, join string
	peerCert, peerKey, peerCA                        string
	clients                                          []string // client host:ports from --cluster, for the startup line
}

// addServeCluster adds the cluster flags to fs.
func addServeCluster(fs *flagSet) *serveCluster {
	c := &serveCluster{}
	fs.StringVar(&c.name, "name", "", "this member's `NAME` in a cluster")
	fs.StringVar(&c.listenPeer, "listen-peer", "", "peer `host:port` this member listens on (default: --advertise-peer, or NAME's in --initial-cluster or --cluster)")
	fs.StringVar(&c.advertise, "advertise-peer", "", "peer `host:port` the other members reach this one at, if not --listen-peer (a NAT, a proxy)")
	fs.StringVar(&c.initial, "initial-cluster", "", "a new cluster's members, `NAME=host:port,…` (peer addresses), this one included")
	fs.StringVar(&c.file, "cluster", "", "cluster `FILE`: one member a line, NAME PEER-host:port CLIENT-host:port; with --name, sets --listen, --listen-peer and --initial-cluster")
	fs.StringVar(&c.join, "join", "", "add this member to the running cluster at `URL` (etcd://h:p,…) on its first start")
	fs.StringVar(&c.peerCert, "peer-tls-cert", "", "peer certificate PEM `FILE`: TLS between members (https peer URLs)")
	fs.StringVar(&c.peerKey, "peer-tls-key", "", "PEM `FILE` of the peer certificate's key")
	fs.StringVar(&c.peerCA, "peer-tls-ca", "", "require peers' certificates (as server and client) signed by a CA in this PEM `FILE`")
	return c
}

// on reports whether any cluster flag asks for a member of a cluster.
func (c *serveCluster) on() bool {
	return c.name != "" || c.initial != "" || c.file != "" || c.join != ""
}

// apply checks the cluster flags and sets them in cfg; listen is the
// --listen flag's value and listenSet whether it was given.
func (c *serveCluster) apply(cfg *embedded.Config, listen *string, listenSet bool) error {
	if (c.peerCert == "") != (c.peerKey == "") {
		return usageErr("serve: --peer-tls-cert and --peer-tls-key go together")
	}
	if c.peerCA != "" && c.peerCert == "" {
		return usageErr("serve: --peer-tls-ca needs --peer-tls-cert and --peer-tls-key")
	}
	for _, f := range []struct{ flag, path string }{{"--peer-tls-cert", c.peerCert}, {"--peer-tls-key", c.peerKey}, {"--peer-tls-ca", c.peerCA}, {"--cluster", c.file}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return usageErr("serve: %s: %v", f.flag, err)
		}
	}
	cfg.PeerCertFile, cfg.PeerKeyFile, cfg.PeerCAFile = c.peerCert, c.peerKey, c.peerCA
	if !c.on() {
		if c.listenPeer != "" || c.advertise != "" {
			return usageErr("serve: --listen-peer and --advertise-peer need --name and --initial-cluster, --cluster or --join")
		}
		return nil
	}
	if c.name == "" {
		return usageErr("serve: a member of a cluster needs --name")
	}
	n := 0
	for _, set := range []bool{c.initial != "", c.file != "", c.join != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageErr("serve: give one of --initial-cluster, --cluster and --join")
	}
	scheme := cfg.PeerScheme()
	if c.file != "" {
		members, err := readClusterFile(c.file)
		if err != nil {
			return usageErr("serve: --cluster: %v", err)
		}
		var parts []string
		found := false
		for _, m := range members {
			parts = append(parts, m.name+"="+scheme+"://"+m.peer)
			c.clients = append(c.clients, m.client)
			if m.name == c.name {
				found = true
				if c.advertise == "" {
					c.advertise = m.peer
				}
				if !listenSet {
					*listen = m.client
				}
			}
		}
		if !found {
			return usageErr("serve: --cluster: no member %q in %s", c.name, c.file)
		}
		c.initial = strings.Join(parts, ",")
	} else if c.initial != "" {
		norm, own, err := normalizeInitial(c.initial, scheme, c.name)
		if err != nil {
			return usageErr("serve: --initial-cluster: %v", err)
		}
		if own == "" {
			return usageErr("serve: --initial-cluster has no member %q (--name)", c.name)
		}
		if c.advertise == "" {
			c.advertise = own
		}
		c.initial = norm
	}
	if c.listenPeer == "" {
		c.listenPeer = c.advertise
	}
	if c.listenPeer == "" {
		return usageErr("serve: --join needs --listen-peer")
	}
	for _, f := range []struct{ flag, addr string }{{"--listen-peer", c.listenPeer}, {"--advertise-peer", c.advertise}} {
		if _, _, err := net.SplitHostPort(f.addr); err != nil && f.addr != "" {
			return usageErr("serve: %s: %v", f.flag, err)
		}
	}
	cfg.Name, cfg.PeerAddr, cfg.AdvertisePeerAddr, cfg.InitialCluster = c.name, c.listenPeer, c.advertise, c.initial
	cfg.ReadyTimeout = -1 // a member serves once a quorum is up, whenever that is
	if c.join != "" {
		u, err := store.Parse(c.join)
		if err != nil || (u.Scheme != store.Etcd && u.Scheme != store.EtcdTLS) {
			return usageErr("serve: --join: want the cluster's etcd://h:p,… URL")
		}
		for _, h := range u.Hosts {
			if u.TLS {
				cfg.Join = append(cfg.Join, "https://"+h)
			} else {
				cfg.Join = append(cfg.Join, "http://"+h)
			}
		}
		if u.TLS {
			// A member of a TLS cluster trusts the CA that signs its
			// clients' certificates and shows its own certificate.
			tc, err := store.TLSFiles{CA: cfg.ClientCAFile, Cert: cfg.CertFile, Key: cfg.KeyFile}.Config("")
			if err != nil {
				return usageErr("serve: --join: %v", err)
			}
			cfg.JoinTLS = tc
		}
	}
	return nil
}

// clusterMember is one line of a --cluster file.
type clusterMember struct{ name, peer, client string }

// readClusterFile reads a --cluster file: one member a line, NAME
// PEER-host:port CLIENT-host:port; blank lines and lines starting with #
// are skipped.
func readClusterFile(path string) ([]clusterMember, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []clusterMember
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: want NAME PEER-host:port CLIENT-host:port", line)
		}
		for _, a := range fields[1:] {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
		}
		ms = append(ms, clusterMember{fields[0], fields[1], fields[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no members")
	}
	return ms, nil
}

// normalizeInitial gives every member of an --initial-cluster value a
// peer URL with scheme, and returns the host:port of member name.
func normalizeInitial(s, scheme, name string) (norm, own string, err error) {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		n, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || n == "" || addr == "" {
			return "", "", fmt.Errorf("%q: want NAME=host:port", p)
		}
		hostPort := addr
		if i := strings.Index(addr, "://"); i >= 0 {
			if addr[:i] != scheme {
				return "", "", fmt.Errorf("%q: peer URLs here are %s:// (peer TLS is %s)", p, scheme, map[bool]string{true: "on", false: "off"}[scheme == "https"])
			}
			hostPort = addr[i+3:]
		}
		if _, _, err := net.SplitHostPort(hostPort); err != nil {
			return "", "", fmt.Errorf("%q: %v", p, err)
		}
		if n == name {
			own = hostPort
		}
		parts = append(parts, n+"="+scheme+"://"+hostPort)
	}
	return strings.Join(parts, ","), own, nil
}

// clusterLine is the startup line of a member: its name and addresses,
// the cluster's leader and the --store URL that reaches every member.
func (c *serveCluster) clusterLine(ctx context.Context, cfg embedded.Config, srv *embedded.Server, dir string) string {
	lead := "none yet"
	if m, ok := srv.Leader(ctx, 5*time.Second); ok {
		lead = m.Name
		if lead == "" {
			lead = m.ID
		}
	}
	clients := c.clients
	if len(clients) == 0 {
		// Members publish their client URLs once they start: wait a
		// little for all of them.
		deadline := time.Now().Add(3 * time.Second)
		for {
			clients = nil
			ms := srv.Members()
			for _, m := range ms {
				for _, u := range m.ClientURLs {
					clients = append(clients, strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"))
				}
			}
			if len(clients) >= len(ms) || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond): // poll interval
			}
		}
	}
	scheme := "etcd"
	if cfg.TLS() {
		scheme = "etcds"
	}
	peerTLS := ""
	if cfg.PeerTLS() {
		peerTLS = " over TLS"
	}
	return fmt.Sprintf("baton: etcd member %s serving on %s (peers%s on %s; data in %s%s); cluster of %d, leader %s; use --store %s://%s%s; Ctrl-C stops\n",
		srv.Name(), srv.Addr(), peerTLS, srv.PeerAddr(), dir, serveModes(cfg, srv), len(srv.Members()), lead,
		scheme, strings.Join(clients, ","), strings.TrimPrefix(serveStore(cfg, srv), scheme+"://"+srv.Addr()))
}

// serveMembers is `baton serve members`: the members of the cluster at
// --store, and its leader.
func (m *Main) serveMembers(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("serve members", "serve members [--store etcd://h:p,…] [--tls-ca F [--tls-cert F --tls-key F]]", &sf, false)
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("serve members: unexpected arguments")
	}
	u, err := sf.parse()
	if err != nil {
		return err
	}
	if u.Scheme != store.Etcd && u.Scheme != store.EtcdTLS {
		return usageErr("serve members: --store must be etcd:// or etcds://")
	}
	var eps []string
	for _, h := range u.Hosts {
		if u.TLS {
			eps = append(eps, "https://"+h)
		} else {
			eps = append(eps, "http://"+h)
		}
	}
	var tc *tls.Config
	if u.TLS {
		if tc, err = sf.tls.Config(""); err != nil {
			return usageErr("serve members: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, sf.dial)
	defer cancel()
	ms, err := embedded.ListMembers(ctx, eps, tc, u.User, u.Password)
	if err != nil {
		if why := dialProbe(u.Hosts); why != nil && errors.Is(err, context.DeadlineExceeded) {
			// The client says only that its deadline passed: name why,
			// as the other commands do.
			err = fmt.Errorf("%w (last connection error: %v)", err, why)
		}
		return fmt.Errorf("serve members: %s: %w", u.String(), err)
	}
	w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tID\tPEER URLS\tCLIENT URLS\tLEADER")
	for _, mb := range ms {
		lead := ""
		if mb.Leader {
			lead = "leader"
		}
		name := mb.Name
		if name == "" {
			name = "(not started)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, mb.ID, strings.Join(mb.PeerURLs, ","), strings.Join(mb.ClientURLs, ","), lead)
	}
	return w.Flush()
}

// dialProbe dials each host once (briefly) and returns the last failure,
// or nil if every one answered.
func dialProbe(hosts []string) error {
	var last error
	for _, h := range hosts {
		c, err := net.DialTimeout("tcp", h, 500*time.Millisecond)
		if err != nil {
			last = err
			continue
		}
		c.Close()
	}
	return last
}
