package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
)

// http2Preface is an HTTP/2 client connection preface with an empty
// SETTINGS frame: a gRPC server answers it with its own SETTINGS.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// probeTLS makes one TLS connection to the first endpoint that accepts
// TCP and checks that both sides accept it, so that a TLS mistake (an
// untrusted server, a refused or missing client certificate, a server
// that does not speak TLS) fails Open at once with the reason. The gRPC
// client would retry such a connection until the deadline and then say
// only "context deadline exceeded". Endpoints that are down, and
// inconclusive answers, are left to the client.
func probeTLS(ctx context.Context, endpoints []string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	for _, ep := range endpoints {
		addr := ep
		if _, rest, ok := strings.Cut(ep, "://"); ok {
			addr = rest
		}
		var d net.Dialer
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		c.NextProtos = []string{"h2"}
		conn := tls.Client(raw, c)
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		err = conn.HandshakeContext(ctx)
		if err == nil {
			// Under TLS 1.3 the server judges the client certificate after
			// the client's side of the handshake is done: its verdict
			// comes with the first read.
			if _, err = conn.Write([]byte(http2Preface)); err == nil {
				_, err = conn.Read(make([]byte, 1))
			}
		}
		_ = conn.Close()
		if err == nil {
			return nil
		}
		return tlsError(addr, err)
	}
	return nil
}

// tlsError explains a failed TLS probe, or returns nil when the failure
// says nothing about TLS (a timeout, a reset).
func tlsError(addr string, err error) error {
	var (
		op      *net.OpError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		record  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &op) && op.Op == "remote error": // an alert from the server
		return fmt.Errorf("etcd: the server at %s refused the TLS connection (it may want a client certificate signed by a CA it trusts): %w", addr, err)
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host):
		return fmt.Errorf("etcd: the server at %s has a certificate this client does not trust (check the CA): %w", addr, err)
	case errors.As(err, &record):
		return fmt.Errorf("etcd: the server at %s does not speak TLS: %w", addr, err)
	}
	return nil
}
