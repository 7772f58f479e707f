// Package serve is what `baton serve` is made of besides its flags: an
// embedded etcd's configuration from serve's flags (client TLS and auth,
// operations, cluster membership), its startup lines, the reload of its
// TLS files on SIGHUP and the table of `baton serve members`.
package serve
