// Package embedded runs a real etcd server inside the process, for tests,
// demos and `baton serve`: a single node on loopback ports, or a member of
// a cluster (Config.Name, InitialCluster, Join).
package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config says where and how to run the server.
type Config struct {
	// DataDir holds the server's data. It is created if missing; a
	// server started again on the same DataDir resumes its data.
	DataDir string
	// ClientAddr is the host:port clients connect to; "" means
	// "127.0.0.1:0", a free loopback port.
	ClientAddr string
	// PeerAddr is the host:port of the peer listener (the other members
	// of a cluster connect to it; a single node uses none); "" means a
	// free loopback port.
	PeerAddr string
	// AdvertisePeerAddr is the host:port the other members reach this one
	// at, if not PeerAddr (a proxy, a NAT); "" means PeerAddr.
	AdvertisePeerAddr string
	// Name is the member's name; "" means "baton".
	Name string
	// InitialCluster lists a new cluster's members as
	// name=peer-URL[,name=peer-URL…], this member included; "" means a
	// cluster of this member alone. Only a member's first start reads it:
	// started again on its data dir, a member rejoins the cluster it
	// belongs to.
	InitialCluster string
	// Join, if not empty, are client URLs of a running cluster this
	// member is added to (a member add through them, then a start with
	// the members they list) on its first start; JoinTLS configures TLS
	// to them. A member with a data dir already simply restarts.
	Join    []string
	JoinTLS *tls.Config
	// PeerCertFile and PeerKeyFile, PEM files of the member's peer
	// certificate and key, make peer traffic TLS (https peer URLs); with
	// PeerCAFile, members verify each other's certificates (as server and
	// as client) against the CAs in it.
	PeerCertFile, PeerKeyFile, PeerCAFile string
	// ReadyTimeout bounds how long Start waits for the server to serve:
	// a member of a cluster serves once a quorum of members is up. 0
	// means 30 s; negative means until ctx is done.
	ReadyTimeout time.Duration
	// Fast shortens the raft heartbeat and election timeouts (10 ms and
	// 100 ms) so the server is ready in tens of milliseconds, and hashes
	// passwords with bcrypt's lowest cost. For tests; it also lowers the
	// minimum lease TTL the server grants.
	Fast bool
	// Logger receives the server's logs; nil discards them.
	Logger *zap.Logger

	// CertFile and KeyFile, PEM files of the server's certificate and
	// key, make the server serve clients over TLS only (https).
	CertFile, KeyFile string
	// ClientCAFile, with CertFile and KeyFile, makes the server require
	// client certificates signed by one of the CAs in this PEM file. With
	// authentication on, etcd then also takes a certificate's common name
	// as the user name of a request that carries no password token.
	ClientCAFile string
	// RootPassword, if not empty, turns on etcd authentication with the
	// user root (role root) and this password. A server started again on
	// the same DataDir must be given the same password; a DataDir whose
	// server had authentication on keeps it on, whatever this says.
	RootPassword string
	// AuthTokenTTL is how long the token a password buys stays valid
	// without use (clients get a new one by themselves); 0 means etcd's
	// default, 300 s. It is counted in whole seconds.
	AuthTokenTTL time.Duration

	// CompactEvery, if positive, runs a maintenance round this often:
	// history older than the previous round is compacted, the backend is
	// defragmented when more than half of it is free (and at least 1 MiB),
	// and this member's space-quota (NOSPACE) alarm is disarmed once the
	// data in use is under half the quota. 0 turns maintenance off, as
	// etcd's own default does; `baton serve` uses DefaultCompactEvery.
	CompactEvery time.Duration
	// QuotaBackendBytes is the backend's space quota: past it etcd raises
	// its NOSPACE alarm and refuses writes. 0 means etcd's default, 2 GiB.
	QuotaBackendBytes int64
	// SnapshotCount is how many applied entries trigger a snapshot (after
	// which older WAL files can go); 0 means etcd's default, 10,000.
	SnapshotCount uint64
}

// TLS reports whether the server serves clients over TLS.
func (c Config) TLS() bool { return c.CertFile != "" || c.KeyFile != "" }

// PeerTLS reports whether peer traffic is TLS.
func (c Config) PeerTLS() bool { return c.PeerCertFile != "" || c.PeerKeyFile != "" }

// PeerScheme is the scheme of peer URLs: https with peer TLS.
func (c Config) PeerScheme() string {
	if c.PeerTLS() {
		return "https"
	}
	return "http"
}

// name is the member's name.
func (c Config) name() string {
	if c.Name == "" {
		return "baton"
	}
	return c.Name
}

// Server is a running embedded etcd.
type Server struct {
	cfg    Config
	client string // resolved client host:port
	peer   string // resolved peer host:port

	mu       sync.Mutex
	etcd     *embed.Etcd
	killAll  context.CancelFunc // ends every open gRPC stream
	stopMain context.CancelFunc // ends the maintenance rounds
	mainDone chan struct{}      // closed when the maintenance rounds ended
	stats    MaintenanceStats
}

// readyTimeout bounds how long Start waits for the server to serve.
const readyTimeout = 30 * time.Second

// Start starts a server and returns once it serves clients. On failure it
// leaves nothing running.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded: DataDir is required")
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("embedded: TLS needs both CertFile and KeyFile")
	}
	if cfg.ClientCAFile != "" && !cfg.TLS() {
		return nil, errors.New("embedded: ClientCAFile needs CertFile and KeyFile")
	}
	if (cfg.PeerCertFile == "") != (cfg.PeerKeyFile == "") {
		return nil, errors.New("embedded: peer TLS needs both PeerCertFile and PeerKeyFile")
	}
	if cfg.PeerCAFile != "" && !cfg.PeerTLS() {
		return nil, errors.New("embedded: PeerCAFile needs PeerCertFile and PeerKeyFile")
	}
	if cfg.InitialCluster != "" && len(cfg.Join) > 0 {
		return nil, errors.New("embedded: InitialCluster and Join exclude each other")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:0"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:0"
	}
	peer, err := resolvePort(cfg.PeerAddr)
	if err != nil {
		return nil, err
	}
	// etcd's HTTP/JSON gateway dials the client address it was given:
	// ":0" must become a real port first, or the gateway dials port 0.
	client, err := resolvePort(cfg.ClientAddr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, client: client, peer: peer}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// resolvePort turns a ":0" address into one with a free port. The peer
// URL is part of the member's identity, so it must be fixed before the
// first start.
func resolvePort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("embedded: address %q: %w", addr, err)
	}
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("embedded: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start starts etcd on s's data dir and ports and returns once it serves.
// On failure it leaves nothing running.
func (s *Server) start(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	ec, err := s.etcdConfig(ctx)
	if err != nil {
		return err
	}
	// etcd's Close waits up to its request timeout (5 s) for open streams
	// (watches) to end by themselves. Every stream's context is tied to
	// killAll, so Stop can end them at once, as a crash would.
	kill, killAll := context.WithCancel(context.Background())
	ec.GRPCAdditionalServerOptions = []grpc.ServerOption{grpc.ChainStreamInterceptor(killable(kill))}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		killAll()
		return fmt.Errorf("embedded: start etcd: %w", err)
	}
	if err := s.ready(ctx, e); err != nil {
		killAll()
		e.Close()
		return err
	}
	s.client = e.Clients[0].Addr().String()
	mctx, stopMain := context.WithCancel(context.Background())
	mainDone := make(chan struct{})
	if s.cfg.CompactEvery > 0 {
		go s.maintain(mctx, e, mainDone)
	} else {
		close(mainDone)
	}
	s.mu.Lock()
	s.etcd, s.killAll, s.stopMain, s.mainDone = e, killAll, stopMain, mainDone
	s.mu.Unlock()
	return nil
}

// etcdConfig is etcd's configuration of s. A member that joins a running
// cluster for the first time is added to it here.
func (s *Server) etcdConfig(ctx context.Context) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name = s.cfg.name()
	ec.Dir = s.cfg.DataDir
	cu := url.URL{Scheme: s.scheme(), Host: s.client}
	pu := url.URL{Scheme: s.cfg.PeerScheme(), Host: s.peer}
	ec.ListenClientUrls = []url.URL{cu}
	ec.AdvertiseClientUrls = []url.URL{cu}
	ec.ListenPeerUrls = []url.URL{pu}
	ec.AdvertisePeerUrls = []url.URL{pu}
	if s.cfg.AdvertisePeerAddr != "" {
		ec.AdvertisePeerUrls = []url.URL{{Scheme: pu.Scheme, Host: s.cfg.AdvertisePeerAddr}}
	}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if s.cfg.InitialCluster != "" {
		ec.InitialCluster = s.cfg.InitialCluster
	}
	if len(s.cfg.Join) > 0 && !hasMember(s.cfg.DataDir) {
		initial, err := join(ctx, s.cfg, ec.AdvertisePeerUrls[0].String())
		if err != nil {
			return nil, err
		}
		ec.InitialCluster, ec.ClusterState = initial, embed.ClusterStateFlagExisting
	}
	if s.cfg.PeerTLS() {
		ec.PeerTLSInfo = tlsInfo(s.cfg.PeerCertFile, s.cfg.PeerKeyFile, s.cfg.PeerCAFile)
	}
	if s.cfg.TLS() {
		ec.ClientTLSInfo = tlsInfo(s.cfg.CertFile, s.cfg.KeyFile, s.cfg.ClientCAFile)
	}
	s.cfg.tune(ec)
	return ec, nil
}

// tlsInfo is a listener's TLS: with a CA file, it requires certificates
// signed by one of its CAs.
func tlsInfo(cert, key, ca string) transport.TLSInfo {
	return transport.TLSInfo{CertFile: cert, KeyFile: key, TrustedCAFile: ca, ClientCertAuth: ca != ""}
}

// tune sets what c changes of etcd's defaults besides addresses and TLS.
func (c Config) tune(ec *embed.Config) {
	if c.AuthTokenTTL > 0 {
		ec.AuthTokenTTL = uint((c.AuthTokenTTL + time.Second - 1) / time.Second)
	}
	if c.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = c.QuotaBackendBytes
	}
	if c.SnapshotCount > 0 {
		ec.SnapshotCount = c.SnapshotCount
	}
	if c.Fast {
		ec.TickMs = 10
		ec.ElectionMs = 100
		ec.UnsafeNoFsync = true
		ec.BcryptCost = 4 // bcrypt's minimum: password checks in microseconds
	}
	lg := c.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
}

// ready waits until e serves (ReadyTimeout), then turns authentication on
// if asked.
func (s *Server) ready(ctx context.Context, e *embed.Etcd) error {
	wait := readyTimeout
	if s.cfg.ReadyTimeout != 0 {
		wait = s.cfg.ReadyTimeout
	}
	if wait < 0 {
		wait = 1<<63 - 1
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fmt.Errorf("embedded: etcd failed: %w", err)
	case <-t.C:
		return errors.New("embedded: etcd not ready in time")
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.cfg.RootPassword != "" {
		return enableAuth(ctx, e, s.cfg.RootPassword)
	}
	return nil
}

// Endpoints are the client URLs to dial: https:// when the server serves
// TLS.
func (s *Server) Endpoints() []string { return []string{s.scheme() + "://" + s.client} }

func (s *Server) scheme() string {
	if s.cfg.TLS() {
		return "https"
	}
	return "http"
}

// Addr is the client host:port.
func (s *Server) Addr() string { return s.client }

// Stop stops the server, keeping its data dir, so that Restart can resume
// it. Open streams (watches) are cut rather than waited for. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	e, killAll, stopMain, mainDone := s.etcd, s.killAll, s.stopMain, s.mainDone
	s.etcd, s.killAll, s.stopMain, s.mainDone = nil, nil, nil, nil
	s.mu.Unlock()
	if e != nil {
		stopMain()
		<-mainDone
		killAll()
		e.Close()
	}
}

// killable returns a stream interceptor that ends the stream's context
// when kill is done.
func killable(kill context.Context) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		stop := context.AfterFunc(kill, cancel)
		defer stop()
		err := handler(srv, &killableStream{ServerStream: ss, ctx: ctx})
		if kill.Err() != nil {
			// What a client sees when its server goes away: it reconnects
			// (and resumes its watches) rather than giving up.
			return status.Error(codes.Unavailable, "embedded: server stopped")
		}
		return err
	}
}

type killableStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (k *killableStream) Context() context.Context { return k.ctx }

// Restart stops the server if it runs and starts it again on the same data
// dir and ports.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	return s.start(ctx)
}

// Close stops the server. Its data dir is left in place.
func (s *Server) Close() error {
	s.Stop()
	return nil
}
