package baton

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/backend"
)

// Group is group membership in Apache Curator's GroupMember layout: each
// member is an ephemeral node NAME/<member id> carrying the member's data,
// so the members of a group are the direct children of NAME. A Group reads
// the membership; a GroupMember joins it. Curator's GroupMember and baton's
// on the same path see each other.
type Group struct {
	s    *Session
	name string
	bad  error // from CleanName: every call returns it
}

// Member is one member of a Group.
type Member struct {
	// ID is the member's id, the name of its node.
	ID string
	// Data is the member's data as read with the listing.
	Data []byte
	// Node is the member's node on the store.
	Node backend.Node
}

// NewGroup returns a view of the group on name (a ZooKeeper path, an etcd
// prefix). It does no I/O.
func NewGroup(s *Session, name string) *Group {
	name, bad := cleanOrKeep(s, name)
	return &Group{s: s, name: name, bad: bad}
}

// Name is the group's name on the store.
func (g *Group) Name() string { return g.name }

// Members returns the group's members now, by id.
func (g *Group) Members(ctx context.Context) ([]Member, error) {
	ms, _, err := g.members(ctx)
	return ms, err
}

// members returns the members and the listing they were read from.
func (g *Group) members(ctx context.Context) ([]Member, []backend.Node, error) {
	if g.bad != nil {
		return nil, nil, g.bad
	}
	c := g.s.conn
	kids, err := c.Children(ctx, g.name)
	if err != nil {
		return nil, nil, err
	}
	ms := make([]Member, 0, len(kids))
	for _, k := range kids {
		data, n, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue // left since the listing: the next listing differs
		}
		if err != nil {
			return nil, nil, err
		}
		ms = append(ms, Member{ID: k.Name, Data: data, Node: n})
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return ms, kids, nil
}

// Watch sends the members now and then again after every change of
// membership (a member joins or leaves, or its node is made again), until
// ctx ends or the session is gone; then it closes the channel. A change of
// a member's data alone is not a change of membership: the data sent is
// what was read with each listing. Each listing sent is complete, so a
// slow reader misses intermediate states, never members.
func (g *Group) Watch(ctx context.Context) <-chan []Member {
	ch := make(chan []Member)
	go func() {
		defer close(ch)
		if g.bad != nil {
			return // a bad name: nothing to watch
		}
		b := newBackoff()
		var last []Member
		sent := false
		for ctx.Err() == nil && g.s.Err() == nil {
			ms, kids, err := g.members(ctx)
			if err != nil {
				b.wait(ctx)
				continue
			}
			b.reset()
			if !sent || !sameMembers(last, ms) {
				select {
				case ch <- ms:
				case <-ctx.Done():
					return
				}
				last, sent = ms, true
			}
			if err := g.s.conn.WaitChildren(ctx, g.name, kids); err != nil && !IsSessionGone(err) && ctx.Err() == nil {
				b.wait(ctx)
			}
		}
	}()
	return ch
}

// sameMembers reports whether two sorted listings hold the same nodes.
func sameMembers(a, b []Member) bool {
	return slices.EqualFunc(a, b, func(x, y Member) bool {
		return x.ID == y.ID && x.Node.Token == y.Node.Token && string(x.Data) == string(y.Data)
	})
}

// GroupMember is one member of a group, Curator's GroupMember: an
// ephemeral node NAME/<id> carrying data, kept by a PersistentNode, so
// that it is made again after the member's session is lost or the node is
// deleted.
type GroupMember struct {
	name, id string
	node     *PersistentNode
}

// NewGroupMember returns member id of the group on name, carrying data.
// It joins when Run is called. It does no I/O.
func NewGroupMember(open SessionFunc, name, id string, data []byte) *GroupMember {
	name, _ = cleanOrKeep(nil, name) // the node's path is checked whole
	return &GroupMember{name: name, id: id, node: NewPersistentNode(open, backend.Join(name, id), data, true)}
}

// ID is the member's id.
func (m *GroupMember) ID() string { return m.id }

// Run joins the group and stays a member until ctx ends, then leaves and
// returns ctx.Err(); see PersistentNode.Run. An id that cannot name a
// node (empty, or holding '/') is an error wrapping ErrInvalidName.
func (m *GroupMember) Run(ctx context.Context) error {
	if m.id == "" || strings.Contains(m.id, "/") {
		return fmt.Errorf("%w: member id %q: want a non-empty name without '/'", ErrInvalidName, m.id)
	}
	return m.node.Run(ctx)
}

// Wait returns once we are a member (at once if we are), or ctx's error.
func (m *GroupMember) Wait(ctx context.Context) error {
	_, err := m.node.Wait(ctx)
	return err
}

// SetData changes our member data; see PersistentNode.SetData.
func (m *GroupMember) SetData(ctx context.Context, data []byte) error {
	return m.node.SetData(ctx, data)
}

// Members returns the group's members now, read on the member's session
// (ErrNotHeld while Run has none), as Curator's getCurrentMembers does.
func (m *GroupMember) Members(ctx context.Context) ([]Member, error) {
	s := m.node.Session()
	if s == nil {
		return nil, ErrNotHeld
	}
	return NewGroup(s, m.name).Members(ctx)
}
