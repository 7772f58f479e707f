package baton

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Identity says who created a node. The recipes write it, as a JSON
// object, into the data of the nodes whose data the recipe does not use
// itself: Mutex and RWMutex contenders, Semaphore leases and DoubleBarrier
// participants. Operators (`baton status`) and peers (kazoo's
// Lock.contenders, Curator's getParticipantNodes) read it to see who holds
// what. An Election candidate's data is its value, and a Queue item's is
// the item.
//
// The command is the program's name only, never its arguments, which may
// carry secrets.
type Identity struct {
	Host string // host name
	PID  int    // process id
	Cmd  string // program name, or what the program says it does
	// TTL is the writer's session timeout when it wrote the node: how
	// long after the writer stops answering the store frees the node.
	TTL time.Duration
	// Created is when the node was written, by the writer's clock.
	Created time.Time
}

// identityJSON is Identity on the wire.
type identityJSON struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Cmd   string `json:"cmd,omitempty"`
	TTLms int64  `json:"ttl_ms,omitempty"`
	AtMs  int64  `json:"at_ms,omitempty"`
}

// maxIdentity bounds the identity's encoding: it travels with every node.
const maxIdentity = 512

var defaultIdentity = sync.OnceValue(func() Identity {
	host, _ := os.Hostname()
	id := Identity{Host: host, PID: os.Getpid()}
	if len(os.Args) > 0 {
		id.Cmd = filepath.Base(os.Args[0])
	}
	return id
})

// DefaultIdentity is this process's identity: its host name, its pid and
// the base name of its executable.
func DefaultIdentity() Identity { return defaultIdentity() }

// Bytes is the identity as written into nodes: a JSON object, never empty,
// at most 512 bytes (a long Cmd is cut short).
func (id Identity) Bytes() []byte {
	w := identityJSON{Host: id.Host, PID: id.PID, Cmd: id.Cmd, TTLms: id.TTL.Milliseconds()}
	if !id.Created.IsZero() {
		w.AtMs = id.Created.UnixMilli()
	}
	b, _ := json.Marshal(w)
	for len(b) > maxIdentity && w.Cmd != "" {
		w.Cmd = w.Cmd[:len(w.Cmd)/2]
		b, _ = json.Marshal(w)
	}
	return b
}

// ParseIdentity reads an identity written by baton from a node's data. It
// reports false for anything else: a peer's data (Curator writes the
// client's IP address, kazoo its identifier), a value or an empty node.
func ParseIdentity(data []byte) (Identity, bool) {
	if len(data) < 2 || data[0] != '{' {
		return Identity{}, false
	}
	var w identityJSON
	if err := json.Unmarshal(data, &w); err != nil || w.Host == "" && w.PID == 0 {
		return Identity{}, false
	}
	id := Identity{Host: w.Host, PID: w.PID, Cmd: w.Cmd, TTL: time.Duration(w.TTLms) * time.Millisecond}
	if w.AtMs != 0 {
		id.Created = time.UnixMilli(w.AtMs)
	}
	return id, true
}

// WithIdentity returns a Session on the same connection whose recipes
// write id (its Host, PID and Cmd) into their nodes instead of
// DefaultIdentity. It does no I/O; both Sessions share one connection, one
// lifetime and one telemetry.
func (s *Session) WithIdentity(id Identity) *Session {
	return &Session{conn: s.conn, ident: Identity{Host: id.Host, PID: id.PID, Cmd: id.Cmd}, tel: s.tel}
}

// Identity is the identity this Session's recipes write into their nodes.
func (s *Session) Identity() Identity { return s.ident }

// nodeData is what a recipe writes into a node it creates for this
// session: the identity, stamped with the session's TTL and the time.
func (s *Session) nodeData() []byte {
	id := s.ident
	id.TTL, id.Created = s.conn.TTL(), time.Now()
	return id.Bytes()
}
