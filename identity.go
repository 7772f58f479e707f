package baton

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
)

// Identity says who created a node. The recipes write it, as JSON, into
// the data of the nodes whose data the recipe does not use itself: Mutex
// and RWMutex contenders, Semaphore leases and DoubleBarrier participants.
// Operators (`baton status`) and peers (kazoo's Lock.contenders, Curator's
// getParticipantNodes) read it to see who holds what. An Election
// candidate's data is its value, and a Queue item's is the item.
//
// The command is the program's name only, never its arguments, which may
// carry secrets.
type Identity struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	Cmd  string `json:"cmd,omitempty"`
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

// Bytes is the identity as written into nodes: a JSON object, never empty.
// A Cmd that would make it longer than 512 bytes is cut short.
func (id Identity) Bytes() []byte {
	b, _ := json.Marshal(id)
	for len(b) > maxIdentity && id.Cmd != "" {
		id.Cmd = id.Cmd[:len(id.Cmd)/2]
		b, _ = json.Marshal(id)
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
	var id Identity
	if err := json.Unmarshal(data, &id); err != nil || id.Host == "" && id.PID == 0 {
		return Identity{}, false
	}
	return id, true
}

// WithIdentity returns a Session on the same connection whose recipes
// write id into their nodes instead of DefaultIdentity. It does no I/O;
// both Sessions share one connection and one lifetime.
func (s *Session) WithIdentity(id Identity) *Session {
	return &Session{conn: s.conn, ident: id.Bytes()}
}

// Identity is the identity this Session's recipes write into their nodes.
func (s *Session) Identity() Identity {
	id, _ := ParseIdentity(s.ident)
	return id
}
