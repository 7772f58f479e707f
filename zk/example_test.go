package zk_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/zk"
)

// Open a session on a ZooKeeper ensemble and hold a lock that Java
// services using Curator's InterProcessMutex on the same path respect.
// (Compiled, not run: it needs a server.)
func ExampleOpen() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zk.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		zk.WithTTL(10*time.Second), zk.WithChroot("/apps/billing"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.Background())

	m := baton.NewMutex(s, "/locks/nightly-report")
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(context.Background())

	work, stop := lease.Context(ctx) // cancelled if the lock is lost
	defer stop()
	if err := nightlyReport(work, lease.Token()); err != nil {
		log.Fatal(err)
	}
}

// nightlyReport stands for the guarded work: it stops when ctx ends and
// passes the fencing token to the resources it writes.
func nightlyReport(ctx context.Context, token int64) error {
	fmt.Println("writing with fencing token", token)
	return ctx.Err()
}

// Hold a lock no other identity can break: the session authenticates with
// a digest identity, and every node baton creates is changeable and
// deletable only by that identity (and the server's super user), over TLS
// to the servers' secure client port. (Compiled, not run: it needs a
// server.)
func ExampleWithACL() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca, err := os.ReadFile("/etc/zookeeper/ca.pem")
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	s, err := zk.Open(ctx, []string{"zk1:2281", "zk2:2281", "zk3:2281"},
		zk.WithTLS(&tls.Config{RootCAs: roots}),
		zk.WithAuth("digest", []byte("billing:"+os.Getenv("ZK_PASSWORD"))),
		zk.WithACL(zk.CreatorACL...))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.Background())

	m := baton.NewMutex(s, "/billing/locks/nightly-report")
	lease, err := m.Lock(ctx) // fails with zk.ErrUnsafeACL if the lock's directory is open to others
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(context.Background())
	if err := nightlyReport(ctx, lease.Token()); err != nil {
		log.Fatal(err)
	}
}
