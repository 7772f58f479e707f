package zk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// CreatorACL gives the creating identity every permission and everybody
// else read access: only the identity that made a node (any digest its
// session authenticated with, see WithAuth) may change or delete it, while
// observers such as `baton status` still read it. Use it as
// WithACL(CreatorACL...) together with WithAuth.
//
// Baton sends the "auth" entry as one digest entry per digest credential
// of the session. ZooKeeper itself would grant every identity the session
// has, including the subject of a TLS client certificate (x509), so that
// all clients sharing a certificate would own each other's nodes. Only a
// session without digest credentials sends "auth" as is.
//
// ZooKeeper checks the delete permission on the parent: what keeps a
// stranger from deleting a contender node is the ACL of the lock's
// directory, which baton also creates with this ACL. Other identities
// cannot create nodes there either: a lock path belongs to the identity
// that created it. An administrator is the server's super digest
// (zookeeper.DigestAuthenticationProvider.superDigest), or further entries
// appended to this ACL in WithACL.
var CreatorACL = []gozk.ACL{
	{Perms: gozk.PermAll, Scheme: "auth"},
	{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"},
}

// ErrUnsafeACL reports, with WithACL, a directory baton was about to create
// a node in whose ACL lets an identity the session's ACL does not name
// delete its children or change its ACL: baton's ACL would not protect the
// node there. The error names the directory and the offending entries.
var ErrUnsafeACL = errors.New("zk: directory ACL lets other identities delete its nodes")

// WithACL sets the ACL of every node baton creates: contender, candidate
// and queue nodes, lock directories and the ancestors it makes (default:
// open to all, world:anyone with every permission). The "auth" scheme
// (as in CreatorACL) stands for the session's own identities and needs
// WithAuth.
//
// After each node it creates, a session with WithACL reads the ACL of the
// node's directory (one request more per create): while the node is in
// it, the directory can be neither deleted nor replaced, so the check
// holds for the node's whole life. If the directory lets an identity other
// than the session's own (its digest credentials) or those named in acl
// delete children or change the ACL, the node is removed and the create
// fails with an error wrapping ErrUnsafeACL rather than give protection it
// could not keep: remove the directory or fix its ACL (zkCli's setAcl), or
// name that identity in acl. A directory that does not let the session
// create nodes at all fails as the server would, wrapping gozk.ErrNoAuth,
// and says the directory belongs to another identity. Transactions
// (baton.Conn.Commit, used by ReliableQueue's claims) check the
// directories of their creates just before they are sent.
//
// Digest ids whose hash the server hides (to a session without ADMIN on
// the directory it shows "user:x") are matched by user name. The subject
// of a TLS client certificate (x509) is not trusted, since a certificate
// may be shared, unless named in acl. Identities of other schemes cannot be
// derived from credentials: they are accepted if the session authenticated
// with that scheme.
func WithACL(acl ...gozk.ACL) Option {
	return func(o *options) { o.acl = append([]gozk.ACL{}, acl...) }
}

// WithTLS connects to the servers' secure client port with TLS (ZooKeeper
// 3.5+ with the netty connection factory and secureClientPort). An empty
// cfg.ServerName is set to each server's host, so certificates are checked
// against the address dialled (an IP address against the certificate's IP
// SANs). A server whose certificate fails verification makes Open fail at
// once with that error.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls = cfg }
}

// expandAuth replaces the "auth" entries of acl with digest entries for
// the session's digest credentials, if it has any (see CreatorACL).
func expandAuth(acl []gozk.ACL, auth []authInfo) []gozk.ACL {
	var ids []string
	for _, a := range auth {
		if a.scheme == "digest" {
			user, pass, _ := strings.Cut(string(a.auth), ":")
			ids = append(ids, gozk.DigestACL(0, user, pass)[0].ID)
		}
	}
	if len(ids) == 0 {
		return acl
	}
	var out []gozk.ACL
	for _, e := range acl {
		if e.Scheme != "auth" {
			out = append(out, e)
			continue
		}
		for _, id := range ids {
			out = append(out, gozk.ACL{Perms: e.Perms, Scheme: "digest", ID: id})
		}
	}
	return out
}

// dangerous are the permissions that let an identity break a lock held in
// a directory: delete its children, or grant itself that right.
const dangerous = gozk.PermDelete | gozk.PermAdmin

// checkACLOptions validates WithACL against the credentials given.
func checkACLOptions(o *options) error {
	if o.acl == nil {
		return nil
	}
	if len(o.acl) == 0 {
		return errors.New("zk: WithACL needs at least one entry (none would make nodes nobody can use)")
	}
	for _, a := range o.acl {
		if a.Scheme == "auth" && len(o.auth) == 0 {
			return errors.New(`zk: WithACL uses the "auth" scheme, which grants the session's own identities, but the session has none: add WithAuth("digest", []byte("user:password"))`)
		}
		if a.Scheme == "" {
			return fmt.Errorf("zk: WithACL: entry %s has no scheme", aclString(a))
		}
	}
	return nil
}

// trusted lists the identities an existing directory may grant dangerous
// permissions to: the session's digest identities, the entries of its ACL
// and the schemes it authenticated with other than digest.
type trusted struct {
	digests []string   // "user:base64(sha1(user:password))"
	users   []string   // the digests' user names
	acl     []gozk.ACL // explicit entries of WithACL
	schemes []string   // non-digest auth schemes
	x509    []string   // TLS client certificates' subjects: may create, not trusted
	all     bool       // WithACL not set: nothing to check
}

func newTrusted(o *options) trusted {
	t := trusted{all: o.acl == nil}
	for _, a := range o.auth {
		if a.scheme != "digest" {
			t.schemes = append(t.schemes, a.scheme)
			continue
		}
		user, pass, _ := strings.Cut(string(a.auth), ":")
		t.digests = append(t.digests, gozk.DigestACL(0, user, pass)[0].ID)
		t.users = append(t.users, user)
	}
	for _, a := range o.acl {
		if a.Scheme != "auth" {
			t.acl = append(t.acl, a)
		}
	}
	if o.tls != nil {
		// ZooKeeper's x509 provider authenticates a session by its client
		// certificate's subject (RFC 2253).
		for _, c := range o.tls.Certificates {
			leaf := c.Leaf
			if leaf == nil && len(c.Certificate) > 0 {
				leaf, _ = x509.ParseCertificate(c.Certificate[0])
			}
			if leaf != nil {
				t.x509 = append(t.x509, leaf.Subject.String())
			}
		}
	}
	return t
}

// allows reports whether entry e of an existing directory's ACL is safe:
// it grants no dangerous permission, or only to an identity we trust with it.
func (t *trusted) allows(e gozk.ACL) bool {
	d := e.Perms & dangerous
	if d == 0 {
		return true
	}
	if e.Scheme == "digest" && t.isOurDigest(e.ID) {
		return true
	}
	if e.Scheme != "digest" && e.Scheme != "world" && e.Scheme != "x509" && slices.Contains(t.schemes, e.Scheme) {
		return true
	}
	for _, a := range t.acl {
		if a.Scheme == e.Scheme && a.ID == e.ID && a.Perms&d == d {
			return true
		}
	}
	return false
}

// isOurDigest reports whether a digest ACL id is one of the session's.
// The server redacts the hash ("user:x") for a reader without ADMIN on the
// node: such an id is matched by its user name.
func (t *trusted) isOurDigest(id string) bool {
	if user, ok := strings.CutSuffix(id, ":x"); ok {
		return slices.Contains(t.users, user)
	}
	return slices.Contains(t.digests, id)
}

// isUs reports whether entry e names one of the session's identities (or
// everyone).
func (t *trusted) isUs(e gozk.ACL) bool {
	switch e.Scheme {
	case "world":
		return e.ID == "anyone"
	case "digest":
		return t.isOurDigest(e.ID)
	case "x509":
		return slices.Contains(t.x509, e.ID)
	}
	return slices.Contains(t.schemes, e.Scheme)
}

// checkDir verifies that dir (a user path) does not let strangers delete
// the nodes baton creates there: its ACL grants delete or admin rights
// only to identities the session trusts (see WithACL), and lets the
// session create nodes. A directory that does not exist passes: baton
// creates it with its own ACL.
func (c *conn) checkDir(ctx context.Context, dir string) error {
	if c.trust.all {
		return nil
	}
	var acl []gozk.ACL
	err := c.retry(ctx, func() error {
		var e error
		acl, _, e = c.zc.GetACL(c.abs(dir))
		return e
	})
	if errors.Is(err, gozk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zk: read the ACL of %s: %w", dir, err)
	}
	var bad, all []string
	mayCreate := false
	for _, e := range acl {
		all = append(all, aclString(e))
		if !c.trust.allows(e) {
			bad = append(bad, aclString(e))
		}
		mayCreate = mayCreate || (e.Perms&gozk.PermCreate != 0 && c.trust.isUs(e))
	}
	if !mayCreate {
		return fmt.Errorf("zk: create in %s: its ACL (%s) does not let this session's identities create nodes there; it belongs to another identity: %w: %w",
			dir, strings.Join(all, ", "), baton.ErrPermission, gozk.ErrNoAuth)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s grants %s; the nodes baton creates there could be deleted by those identities: remove %s or restrict its ACL (zkCli setAcl), or name them in WithACL",
			ErrUnsafeACL, dir, strings.Join(bad, ", "), dir)
	}
	return nil
}

// verifyCreated checks, after a create, the ACL of the directory our node
// n is in: as long as n is there the directory cannot be deleted (nor
// swapped for another), and only identities checkDir trusts may change its
// ACL, so one check covers n's whole life. If the check fails or cannot
// be made, n is removed: a failed Create leaves nothing.
func (c *conn) verifyCreated(ctx context.Context, dir string, n backend.Node) (backend.Node, error) {
	if c.trust.all {
		return n, nil
	}
	err := c.checkDir(ctx, dir)
	if err == nil {
		return n, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	path := c.abs(n.Path)
	if derr := c.retry(cctx, func() error { return c.zc.Delete(path, -1) }); derr != nil && !errors.Is(derr, gozk.ErrNoNode) {
		return backend.Node{}, fmt.Errorf("%w (and removing %s failed: %v)", err, n.Path, derr)
	}
	return backend.Node{}, err
}

// aclString formats an ACL entry as zkCli shows it: scheme:id:perms.
func aclString(a gozk.ACL) string {
	var p strings.Builder
	for _, f := range []struct {
		bit  int32
		name byte
	}{{gozk.PermCreate, 'c'}, {gozk.PermDelete, 'd'}, {gozk.PermRead, 'r'}, {gozk.PermWrite, 'w'}, {gozk.PermAdmin, 'a'}} {
		if a.Perms&f.bit != 0 {
			p.WriteByte(f.name)
		}
	}
	if a.ID == "" {
		return a.Scheme + ":" + p.String()
	}
	return a.Scheme + ":" + a.ID + ":" + p.String()
}
