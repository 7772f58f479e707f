package serve

import (
	"flag"
	"net"
	"os"
	"strings"

	"github.com/batonhq/baton/cmd/baton/internal/exit"
	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/store"
)

// Cluster are serve's cluster flags: a member of a cluster of embedded
// etcds.
type Cluster struct {
	name, listenPeer, advertise, initial, file, join string
	peerCert, peerKey, peerCA                        string
	clients                                          []string // client host:ports from --cluster, for the startup line
}

// AddFlags adds the cluster flags to fs.
func (c *Cluster) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", "", "this member's `NAME` in a cluster")
	fs.StringVar(&c.listenPeer, "listen-peer", "", "peer `host:port` this member listens on (default: --advertise-peer, or NAME's in --initial-cluster or --cluster)")
	fs.StringVar(&c.advertise, "advertise-peer", "", "peer `host:port` the other members reach this one at, if not --listen-peer (a NAT, a proxy)")
	fs.StringVar(&c.initial, "initial-cluster", "", "a new cluster's members, `NAME=host:port,…` (peer addresses), this one included")
	fs.StringVar(&c.file, "cluster", "", "cluster `FILE`: one member a line, NAME PEER-host:port CLIENT-host:port; with --name, sets --listen, --listen-peer and --initial-cluster")
	fs.StringVar(&c.join, "join", "", "add this member to the running cluster at `URL` (etcd://h:p,…) on its first start")
	fs.StringVar(&c.peerCert, "peer-tls-cert", "", "peer certificate PEM `FILE`: TLS between members (https peer URLs)")
	fs.StringVar(&c.peerKey, "peer-tls-key", "", "PEM `FILE` of the peer certificate's key")
	fs.StringVar(&c.peerCA, "peer-tls-ca", "", "require peers' certificates (as server and client) signed by a CA in this PEM `FILE`")
}

// On reports whether any cluster flag asks for a member of a cluster.
func (c *Cluster) On() bool {
	return c.name != "" || c.initial != "" || c.file != "" || c.join != ""
}

// Name is the member's name (--name).
func (c *Cluster) Name() string { return c.name }

// ListenPeer is the peer address the member listens on, once Apply set it.
func (c *Cluster) ListenPeer() string { return c.listenPeer }

// Apply checks the cluster flags and sets them in cfg; listen is the
// --listen flag's value, which a --cluster file sets unless listenSet (it
// was given). Its errors are usage errors.
func (c *Cluster) Apply(cfg *embedded.Config, listen *string, listenSet bool) error {
	if err := c.applyPeerTLS(cfg); err != nil {
		return err
	}
	if !c.On() {
		if c.listenPeer != "" || c.advertise != "" {
			return exit.Usagef("serve: --listen-peer and --advertise-peer need --name and --initial-cluster, --cluster or --join")
		}
		return nil
	}
	if err := c.checkMember(); err != nil {
		return err
	}
	var err error
	switch {
	case c.file != "":
		err = c.fromFile(cfg.PeerScheme(), listen, listenSet)
	case c.initial != "":
		err = c.fromInitial(cfg.PeerScheme())
	}
	if err != nil {
		return err
	}
	if err := c.peerAddrs(); err != nil {
		return err
	}
	cfg.Name, cfg.PeerAddr, cfg.AdvertisePeerAddr, cfg.InitialCluster = c.name, c.listenPeer, c.advertise, c.initial
	cfg.ReadyTimeout = -1 // a member serves once a quorum is up, whenever that is
	if c.join != "" {
		return c.applyJoin(cfg)
	}
	return nil
}

// applyPeerTLS checks the peer TLS files (and the --cluster file) and sets
// them in cfg.
func (c *Cluster) applyPeerTLS(cfg *embedded.Config) error {
	if (c.peerCert == "") != (c.peerKey == "") {
		return exit.Usagef("serve: --peer-tls-cert and --peer-tls-key go together")
	}
	if c.peerCA != "" && c.peerCert == "" {
		return exit.Usagef("serve: --peer-tls-ca needs --peer-tls-cert and --peer-tls-key")
	}
	if err := statFiles("--peer-tls-cert", c.peerCert, "--peer-tls-key", c.peerKey, "--peer-tls-ca", c.peerCA, "--cluster", c.file); err != nil {
		return err
	}
	cfg.PeerCertFile, cfg.PeerKeyFile, cfg.PeerCAFile = c.peerCert, c.peerKey, c.peerCA
	return nil
}

// statFiles makes a file that cannot be read a usage error naming its
// flag; flagsAndPaths alternate, and an empty path is not given.
func statFiles(flagsAndPaths ...string) error {
	for i := 0; i+1 < len(flagsAndPaths); i += 2 {
		if path := flagsAndPaths[i+1]; path != "" {
			if _, err := os.Stat(path); err != nil {
				return exit.Usagef("serve: %s: %v", flagsAndPaths[i], err)
			}
		}
	}
	return nil
}

// checkMember checks that a member has a name and one way to find its
// cluster.
func (c *Cluster) checkMember() error {
	if c.name == "" {
		return exit.Usagef("serve: a member of a cluster needs --name")
	}
	n := 0
	for _, set := range []bool{c.initial != "", c.file != "", c.join != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return exit.Usagef("serve: give one of --initial-cluster, --cluster and --join")
	}
	return nil
}

// fromFile sets the initial cluster, this member's peer address and
// (unless listenSet) its client address from the --cluster file.
func (c *Cluster) fromFile(scheme string, listen *string, listenSet bool) error {
	members, err := readClusterFile(c.file)
	if err != nil {
		return exit.Usagef("serve: --cluster: %v", err)
	}
	var parts []string
	found := false
	for _, m := range members {
		parts = append(parts, m.name+"="+scheme+"://"+m.peer)
		c.clients = append(c.clients, m.client)
		if m.name != c.name {
			continue
		}
		found = true
		if c.advertise == "" {
			c.advertise = m.peer
		}
		if !listenSet {
			*listen = m.client
		}
	}
	if !found {
		return exit.Usagef("serve: --cluster: no member %q in %s", c.name, c.file)
	}
	c.initial = strings.Join(parts, ",")
	return nil
}

// fromInitial checks --initial-cluster, gives its peers URLs of scheme,
// and finds this member's peer address in it.
func (c *Cluster) fromInitial(scheme string) error {
	norm, own, err := normalizeInitial(c.initial, scheme, c.name)
	if err != nil {
		return exit.Usagef("serve: --initial-cluster: %v", err)
	}
	if own == "" {
		return exit.Usagef("serve: --initial-cluster has no member %q (--name)", c.name)
	}
	if c.advertise == "" {
		c.advertise = own
	}
	c.initial = norm
	return nil
}

// peerAddrs settles the peer address listened on and checks both.
func (c *Cluster) peerAddrs() error {
	if c.listenPeer == "" {
		c.listenPeer = c.advertise
	}
	if c.listenPeer == "" {
		return exit.Usagef("serve: --join needs --listen-peer")
	}
	for _, f := range []struct{ flag, addr string }{{"--listen-peer", c.listenPeer}, {"--advertise-peer", c.advertise}} {
		if _, _, err := net.SplitHostPort(f.addr); err != nil && f.addr != "" {
			return exit.Usagef("serve: %s: %v", f.flag, err)
		}
	}
	return nil
}

// applyJoin sets the running cluster that --join names in cfg.
func (c *Cluster) applyJoin(cfg *embedded.Config) error {
	u, err := store.Parse(c.join)
	if err != nil || !u.Members() {
		return exit.Usagef("serve: --join: want the cluster's etcd://h:p,… URL")
	}
	cfg.Join = endpoints(u)
	if u.TLS {
		// A member of a TLS cluster trusts the CA that signs its
		// clients' certificates and shows its own certificate.
		tc, err := store.TLSFiles{CA: cfg.ClientCAFile, Cert: cfg.CertFile, Key: cfg.KeyFile}.Config("")
		if err != nil {
			return exit.Usagef("serve: --join: %v", err)
		}
		cfg.JoinTLS = tc
	}
	return nil
}

// endpoints are u's hosts as etcd client endpoints.
func endpoints(u store.URL) []string {
	var eps []string
	for _, h := range u.Hosts {
		if u.TLS {
			eps = append(eps, "https://"+h)
		} else {
			eps = append(eps, "http://"+h)
		}
	}
	return eps
}
