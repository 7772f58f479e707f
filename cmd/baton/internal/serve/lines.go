package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
)

// ClusterLine is the startup line of a member: its name and addresses,
// the cluster's leader and the --store URL that reaches every member.
func (c *Cluster) ClusterLine(ctx context.Context, cfg embedded.Config, srv *embedded.Server, dir string) string {
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
		srv.Name(), srv.Addr(), peerTLS, srv.PeerAddr(), dir, Modes(cfg, srv), len(srv.Members()), lead,
		scheme, strings.Join(clients, ","), strings.TrimPrefix(StoreURL(cfg, srv), scheme+"://"+srv.Addr()))
}

// Modes describes TLS and authentication for the startup line.
func Modes(cfg embedded.Config, srv *embedded.Server) string {
	var modes []string
	if cfg.TLS() {
		if cfg.ClientCAFile != "" {
			modes = append(modes, "TLS with client certificates")
		} else {
			modes = append(modes, "TLS")
		}
	}
	if srv.AuthEnabled() {
		modes = append(modes, "auth on, user root")
	}
	if len(modes) == 0 {
		return ""
	}
	return "; " + strings.Join(modes, ", ")
}

// StoreURL is the --store URL (and TLS flags) clients use, without the
// password.
func StoreURL(cfg embedded.Config, srv *embedded.Server) string {
	scheme, user := "etcd", ""
	if cfg.TLS() {
		scheme = "etcds"
	}
	if srv.AuthEnabled() {
		user = "root:$BATON_AUTH_PASSWORD@"
	}
	s := scheme + "://" + user + srv.Addr()
	if cfg.TLS() {
		s += " --tls-ca CA-FILE"
	}
	if cfg.ClientCAFile != "" {
		s += " --tls-cert FILE --tls-key FILE"
	}
	return s
}
