package store

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrBadTLS is wrapped by the errors of TLSFiles.Config and by Open's
// error when the TLS files cannot be used (missing, not PEM, or given for
// a store that is not TLS).
var ErrBadTLS = errors.New("bad TLS settings")

// TLSFiles names PEM files for a TLS store connection (the --tls-ca,
// --tls-cert and --tls-key flags).
type TLSFiles struct {
	// CA holds the certificates that may sign the server's; "" means the
	// system's roots.
	CA string
	// Cert and Key are the client certificate (chain) and its private
	// key, for servers that want client certificates: both or neither.
	Cert, Key string
}

// IsZero reports whether no file is named.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// Config reads the files and returns a client TLS configuration that
// verifies the server as serverName ("" lets the client library use the
// host it dials). Errors name the file, never its contents, and wrap
// ErrBadTLS.
func (f TLSFiles) Config(serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %w", ErrBadTLS, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrBadTLS, f.CA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.Cert == "" && f.Key == "":
	case f.Cert == "" || f.Key == "":
		return nil, fmt.Errorf("%w: a client certificate needs both a cert file and a key file (--tls-cert and --tls-key)", ErrBadTLS)
	default:
		for _, p := range []string{f.Cert, f.Key} {
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadTLS, err)
			}
		}
		// tls's own messages never quote the files' contents, but may
		// not say which file is wrong: name both.
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate %s with key %s: %v", ErrBadTLS, f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// CheckTLS rejects TLS files for a store that does not use TLS.
func (u URL) CheckTLS(f TLSFiles) error {
	if !f.IsZero() && !u.TLS {
		return fmt.Errorf("%w: TLS files (--tls-ca, --tls-cert, --tls-key, $BATON_TLS_*) need a TLS store: zks://, etcds:// or rediss://, not %s://", ErrBadTLS, u.Scheme)
	}
	return nil
}
