package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/etcdprobe"
)

// Member is one member of a cluster, as the cluster lists it.
type Member struct {
	// ID is the member's ID, in hex as etcdctl shows it.
	ID string
	// Name is the member's name; "" until a member added by Join has
	// started.
	Name string
	// PeerURLs and ClientURLs are where the member listens for its peers
	// and for clients (none until it has started).
	PeerURLs, ClientURLs []string
	// Leader is set on the member that leads the cluster.
	Leader bool
}

// hasMember reports whether dir holds a member's data already (its
// write-ahead log): its start is a restart.
func hasMember(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "member", "wal"))
	return err == nil
}

// join adds a member with peer URL peer to the cluster at cfg.Join and
// returns the initial-cluster string it starts with.
func join(ctx context.Context, cfg Config, peer string) (string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Join, TLS: cfg.JoinTLS, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", fmt.Errorf("embedded: join %s: %w", strings.Join(cfg.Join, ","), err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	// etcd refuses a member while its cluster has not been healthy (all
	// connected) for a few seconds, as just after it started: retry.
	resp, err := cli.MemberAdd(ctx, []string{peer})
	for errors.Is(err, rpctypes.ErrUnhealthy) {
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // retry interval
		}
		if ctx.Err() != nil {
			break
		}
		resp, err = cli.MemberAdd(ctx, []string{peer})
	}
	if err != nil {
		return "", fmt.Errorf("embedded: join %s: add member: %w", strings.Join(cfg.Join, ","), err)
	}
	var parts []string
	for _, m := range resp.Members {
		name := m.Name
		if m.ID == resp.Member.ID {
			name = cfg.name()
		}
		if name == "" {
			// Another member added and not started yet: etcd's own
			// join would fail the same way.
			return "", fmt.Errorf("embedded: join: member %x was added and never started; remove it first", m.ID)
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	return strings.Join(parts, ","), nil
}

// Members lists this server's cluster as it knows it.
func (s *Server) Members() []Member {
	s.mu.Lock()
	e := s.etcd
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	lead := uint64(e.Server.Leader())
	var ms []Member
	for _, m := range e.Server.Cluster().Members() {
		ms = append(ms, Member{
			ID: fmt.Sprintf("%x", uint64(m.ID)), Name: m.Name, Leader: uint64(m.ID) == lead,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
		})
	}
	sortMembers(ms)
	return ms
}

// Name is the member's name.
func (s *Server) Name() string { return s.cfg.name() }

// PeerAddr is the peer host:port.
func (s *Server) PeerAddr() string { return s.peer }

// ListMembers lists the members of the cluster at endpoints (client
// URLs), and which one leads it, through a client with TLS tlsCfg (nil
// for none) and credentials user and password ("" for none).
func ListMembers(ctx context.Context, endpoints []string, tlsCfg *tls.Config, user, password string) ([]Member, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, TLS: tlsCfg, Username: user, Password: password,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	// Any member that answers knows the leader: they are asked at once,
	// so that one that is down does not use up ctx for the others.
	st, err := etcdprobe.FirstStatus(ctx, cli, endpoints)
	if err != nil {
		return nil, err
	}
	lead := st.Leader
	var ms []Member
	for _, m := range resp.Members {
		ms = append(ms, Member{
			ID: fmt.Sprintf("%x", m.ID), Name: m.Name, Leader: m.ID == lead,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
		})
	}
	sortMembers(ms)
	return ms, nil
}

func sortMembers(ms []Member) {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Name != ms[j].Name {
			return ms[i].Name < ms[j].Name
		}
		return ms[i].ID < ms[j].ID
	})
}

// Leader returns the member that leads the cluster, waiting up to wait
// for an election to end; ok is false if none leads by then.
func (s *Server) Leader(ctx context.Context, wait time.Duration) (m Member, ok bool) {
	deadline := time.Now().Add(wait)
	for {
		for _, m := range s.Members() {
			if m.Leader {
				return m, true
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return Member{}, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
}
