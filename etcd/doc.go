// Package etcd is the baton backend on etcd v3. Open returns a session,
// kept alive by an etcd lease, for the recipes.
//
// Keys follow the layout of etcd's concurrency package, so `etcdctl lock`
// and `etcdctl elect` contend with baton's recipes. Fencing tokens are
// CreateRevisions, and every delete and commit is conditional on one, so a
// stale release never touches a newer key of the same name. WithAuth and
// WithTLS connect to a secured cluster.
//
// The layout, the keepalive and loss rule, the permissions a recipe needs
// and how waits use watches are explained in docs/etcd.md.
package etcd
