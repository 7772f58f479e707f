package store

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
)

// Glance reads name for a waiter's display: without a watch (a waiter's
// only watch stays its predecessor's, as the line's herd-free wait wants)
// and, on a store with sessions, reading each node's data once, so that a
// read of a line of any length costs a few listings; holderTTLs asks for
// the time left on the holders' leases (etcd), a request each.
func (s *Store) Glance(name string, holderTTLs bool) Glance {
	return s.kind.glance(s, name, holderTTLs)
}

// nodesOf is the nodes of a directory the layout reader listed.
func nodesOf(kids []layout.Child) []backend.Node {
	out := make([]backend.Node, len(kids))
	for i, k := range kids {
		out[i] = k.Node
	}
	return out
}

func (k sessionKind) glance(s *Store, name string, holderTTLs bool) Glance {
	return &lineReader{s: s, name: name, dial: s.opts.DialTimeout,
		conn: &onceConn{Conn: k.s.Conn(), listed: map[string]listedNode{}}, ttls: holderTTLs}
}

// lineReader is a session store's Glance.
type lineReader struct {
	s    *Store
	name string
	dial time.Duration
	conn *onceConn
	ttls bool // the holders' lease TTLs, shown on a terminal
}

func (r *lineReader) Read(ctx context.Context) (layout.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout(r.dial))
	defer cancel()
	l, err := layout.Read(ctx, r.conn, r.s.URL.Layout(), r.name)
	if err != nil {
		return layout.Report{}, fmt.Errorf("status %s: %w", r.name, err)
	}
	rep := layout.Describe(l, time.Now())
	if t, ok := r.conn.Conn.(layout.LeaseTTLer); ok && r.ttls {
		for i, e := range rep.Entries {
			if (e.Role == layout.RoleHolder || e.Role == layout.RoleLeader) && e.Session != "" && e.TTL < 0 {
				if left, err := t.OwnerTTL(ctx, e.Session); err == nil {
					rep.Entries[i].TTL = left
				}
			}
		}
	}
	return rep, nil
}

func (r *lineReader) Other(ctx context.Context) (string, layout.Report, bool) {
	return otherOnSession(ctx, r.conn.Conn, r.s.URL, r.s.URL.Layout(), r.name, r.dial)
}

// onceConn is a store's Conn that reads the data of each node it listed
// once. A node is known by its path and, where the listing carries them
// (etcd), its token and version, so a key made again or written is read
// again; a ZooKeeper line is of sequential nodes, whose names are never
// used twice. It hides the store's optional capabilities (the lease TTLs
// layout.Read would ask for every owner in line).
type onceConn struct {
	backend.Conn
	listed map[string]listedNode // by path, from the last listing of its directory
}

// listedNode is a node of a listing and, once read, its data.
type listedNode struct {
	dir            string
	token, version int64
	read           bool
	data           []byte
	node           backend.Node
}

func (c *onceConn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	kids, err := c.Conn.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	fresh := make(map[string]listedNode, len(kids))
	for _, k := range kids {
		n, ok := c.listed[k.Path]
		if !ok || n.dir != dir || n.token != k.Token || n.version != k.Version {
			n = listedNode{dir: dir, token: k.Token, version: k.Version}
		}
		fresh[k.Path] = n
	}
	// What the directory no longer holds is forgotten.
	for p, n := range c.listed {
		if n.dir == dir {
			delete(c.listed, p)
		}
	}
	for p, n := range fresh {
		c.listed[p] = n
	}
	return kids, nil
}

func (c *onceConn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	n, ok := c.listed[path]
	if ok && n.read {
		return n.data, n.node, nil
	}
	data, node, err := c.Conn.Get(ctx, path)
	if err == nil && ok {
		n.read, n.data, n.node = true, data, node
		c.listed[path] = n
	}
	return data, node, err
}
