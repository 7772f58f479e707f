// Package redact hides credentials in what baton prints: the password of
// a store URL, secrets in messages, and errors whose text may hold them.
package redact

import (
	"strings"
)

// Mask stands for a hidden secret.
const Mask = "xxxxx"

// URL returns raw with the password of its user information (between the
// first ':' after "://" and the last '@'), and the value of any query
// option named *password, replaced by Mask. It needs no
// valid URL: it serves the error that says a URL does not parse. A URL
// with no password is returned as it is.
func URL(raw string) string {
	return queryPasswords(userPassword(raw))
}

// queryPasswords masks the values of the query options named *password
// (a redis-sentinel:// URL's sentinel_password).
func queryPasswords(raw string) string {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw
	}
	opts := strings.Split(query, "&")
	for i, o := range opts {
		if k, _, ok := strings.Cut(o, "="); ok && strings.HasSuffix(strings.ToLower(k), "password") {
			opts[i] = k + "=" + Mask
		}
	}
	return base + "?" + strings.Join(opts, "&")
}

func userPassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	start := len(raw) - len(rest)
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	colon := strings.Index(rest[:at], ":")
	if colon < 0 {
		return raw
	}
	return raw[:start+colon+1] + Mask + raw[start+at:]
}

// Secrets returns s with every non-empty secret in it replaced by Mask.
func Secrets(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return s
}

// Error wraps err so that its message shows none of secrets, while
// errors.Is and errors.As still see err. An error whose message holds no
// secret (and nil) is returned as it is.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if Secrets(msg, secrets...) == msg {
		return err
	}
	return &redacted{err: err, secrets: secrets}
}

type redacted struct {
	err     error
	secrets []string
}

func (r *redacted) Error() string { return Secrets(r.err.Error(), r.secrets...) }
func (r *redacted) Unwrap() error { return r.err }
