package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/batonhq/baton/etcd/embedded"
)

// CAs are the contents of the CA files serve was started (or last
// reloaded) with.
type CAs struct{ client, peer []byte }

// ReadCAs reads cfg's CA files.
func ReadCAs(cfg embedded.Config) CAs {
	var c CAs
	if cfg.ClientCAFile != "" {
		c.client, _ = os.ReadFile(cfg.ClientCAFile)
	}
	if cfg.PeerCAFile != "" {
		c.peer, _ = os.ReadFile(cfg.PeerCAFile)
	}
	return c
}

// ReloadTLS answers SIGHUP: it checks the TLS files serve was started
// with and reports them. etcd reads the certificates and keys again on
// every new connection, so new ones serve from the next connection on; a
// CA file that changed takes a restart of the server (on the same data
// dir and ports: clients reconnect, sessions keep their leases). A file
// that does not load is reported and nothing is restarted. What it did
// goes to stdout, what went wrong to stderr.
func ReloadTLS(ctx context.Context, stdout, stderr io.Writer, cfg embedded.Config, srv *embedded.Server, last *CAs) {
	if !cfg.TLS() && !cfg.PeerTLS() {
		fmt.Fprintln(stdout, "baton: SIGHUP: no TLS files to reload")
		return
	}
	var notes []string
	for _, p := range []struct{ what, cert, key, ca string }{
		{"client", cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile},
		{"peer", cfg.PeerCertFile, cfg.PeerKeyFile, cfg.PeerCAFile},
	} {
		if p.cert == "" {
			continue
		}
		pair, err := tls.LoadX509KeyPair(p.cert, p.key)
		if err != nil {
			fmt.Fprintf(stderr, "baton: SIGHUP: %s certificate %s: %v; new %s connections fail until it loads\n", p.what, p.cert, err, p.what)
			return
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			fmt.Fprintf(stderr, "baton: SIGHUP: %s certificate %s: %v\n", p.what, p.cert, err)
			return
		}
		notes = append(notes, fmt.Sprintf("%s certificate %q valid until %s", p.what, leaf.Subject.CommonName, leaf.NotAfter.UTC().Format("2006-01-02 15:04 MST")))
		if p.ca != "" {
			pem, err := os.ReadFile(p.ca)
			if err == nil && !x509.NewCertPool().AppendCertsFromPEM(pem) {
				err = fmt.Errorf("no certificate in it")
			}
			if err != nil {
				fmt.Fprintf(stderr, "baton: SIGHUP: %s CA %s: %v; kept the previous one\n", p.what, p.ca, err)
				return
			}
		}
	}
	now := ReadCAs(cfg)
	if bytes.Equal(now.client, last.client) && bytes.Equal(now.peer, last.peer) {
		fmt.Fprintf(stdout, "baton: TLS reloaded: %s; they serve from the next connection\n", strings.Join(notes, ", "))
		return
	}
	fmt.Fprintf(stdout, "baton: TLS reloaded: %s; a CA changed: restarting etcd\n", strings.Join(notes, ", "))
	if err := srv.Restart(ctx); err != nil {
		fmt.Fprintf(stderr, "baton: SIGHUP: restart etcd: %v\n", err)
		return
	}
	*last = now
	fmt.Fprintf(stdout, "baton: etcd restarted on %s with the new CA\n", srv.Addr())
}
