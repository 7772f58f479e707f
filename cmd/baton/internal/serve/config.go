package serve

import (
	"github.com/batonhq/baton/cmd/baton/internal/exit"
	"github.com/batonhq/baton/etcd/embedded"
)

// Security are serve's client TLS and authentication flags.
type Security struct {
	Cert, Key, ClientCA string
	Auth                bool   // --auth: etcd authentication, user root
	RootPassword        string // root's password with Auth ($BATON_AUTH_PASSWORD)
}

// Config checks the security flags and returns the server's
// configuration for them (without its addresses). Its errors are usage
// errors.
func (s Security) Config() (embedded.Config, error) {
	var cfg embedded.Config
	if (s.Cert == "") != (s.Key == "") {
		return cfg, exit.Usagef("serve: --tls-cert and --tls-key go together")
	}
	if s.ClientCA != "" && s.Cert == "" {
		return cfg, exit.Usagef("serve: --tls-client-ca needs --tls-cert and --tls-key")
	}
	if err := statFiles("--tls-cert", s.Cert, "--tls-key", s.Key, "--tls-client-ca", s.ClientCA); err != nil {
		return cfg, err
	}
	cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile = s.Cert, s.Key, s.ClientCA
	if s.Auth {
		cfg.RootPassword = s.RootPassword
		if cfg.RootPassword == "" {
			return cfg, exit.Usagef("serve: --auth needs root's password in $BATON_AUTH_PASSWORD")
		}
	}
	return cfg, nil
}
