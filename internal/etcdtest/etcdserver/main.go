// Command etcdserver runs baton's embedded etcd (package etcd/embedded) as
// a process of its own, for tests: a test binary built with -race would
// otherwise run the whole etcd server under the race detector. It prints
// "READY <host:port>" once it serves clients and stops on SIGTERM/SIGINT.
// -cert, -key and -client-ca turn on TLS (and client certificates);
// $ETCDSERVER_ROOT_PASSWORD, if set, turns on authentication as root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory")
	listen := flag.String("listen", "127.0.0.1:0", "client address")
	cert := flag.String("cert", "", "server certificate PEM file (TLS)")
	key := flag.String("key", "", "server key PEM file")
	clientCA := flag.String("client-ca", "", "CA PEM file for client certificates")
	tokenTTL := flag.Duration("auth-token-ttl", 0, "auth token lifetime (0: etcd's default)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := embedded.Start(ctx, embedded.Config{DataDir: *dataDir, ClientAddr: *listen, Fast: true,
		CertFile: *cert, KeyFile: *key, ClientCAFile: *clientCA, RootPassword: os.Getenv("ETCDSERVER_ROOT_PASSWORD"),
		AuthTokenTTL: *tokenTTL})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s\n", srv.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = srv.Close()
}
