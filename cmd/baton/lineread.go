package main

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// lineReader reads a name's status for the wait display: without a watch
// (a waiter's only watch stays its predecessor's, as the line's herd-free
// wait wants), and reading each node's data once, so that a read of a
// line of any length costs a few listings.
type lineReader struct {
	src  *sessionSource
	conn *onceConn
	ttls bool // the holders' lease TTLs, shown on a terminal

	// other is the name's other spelling where it is another lock
	// (status_spelling.go), read once, by the first read of the wait.
	other     *otherSpelling
	otherRead bool
}

// statusReader reads a name's status: a statusSource without its wait.
type statusReader interface {
	read(ctx context.Context) (statusReport, error)
}

// lineReaderFor reads name on s for the wait display; holderTTLs asks for
// the time left on the holders' leases (etcd), a request each.
func lineReaderFor(s *store.Store, name string, sf *storeFlags, holderTTLs bool) statusReader {
	if s.Session == nil {
		// Redis keeps no watches: its status source only reads.
		return &redisSource{u: s.URL, name: name, o: sf.options(), once: true}
	}
	return &lineReader{
		src:  &sessionSource{s: s, name: name, dial: sf.dial},
		conn: &onceConn{Conn: s.Session.Conn(), listed: map[string]listedNode{}},
		ttls: holderTTLs,
	}
}

func (r *lineReader) read(ctx context.Context) (statusReport, error) {
	ctx, cancel := context.WithTimeout(ctx, r.src.dial+10*time.Second)
	defer cancel()
	l, err := layout.Read(ctx, r.conn, r.src.kind(), r.src.name)
	if err != nil {
		return statusReport{}, fmt.Errorf("status %s: %w", r.src.name, err)
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
	if !r.otherRead {
		r.other, r.otherRead = r.src.otherOf(ctx), true
	}
	return statusReport{Store: r.src.s.URL.String(), Held: rep.Held(), Report: rep, Other: r.other}, nil
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
