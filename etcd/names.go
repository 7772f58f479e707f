package etcd

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// maxKeyLen bounds names; etcd itself allows more, but a key that long is
// a mistake.
const maxKeyLen = 4096

// minLeaseHex is the shortest bare hex name read as a lease id (etcd lease
// ids carry member bits in their top bytes, so they are 13–16 digits); it
// keeps literal names like "add" or "cafe" literal.
const minLeaseHex = 8

// prefixedKinds are the sequential kinds named <kind>-<id>; KindLock is
// the bare id, as etcd's concurrency package names its keys.
var prefixedKinds = []string{backend.KindLatch, backend.KindRead, backend.KindWrite, backend.KindLease, backend.KindQueue}

// CheckName reports why name cannot name a recipe, as an error wrapping
// baton.ErrInvalidName, or nil: baton.CleanName's rules, the same on every
// store. A recipe uses the name as written as its key prefix, as etcd's
// concurrency package and `etcdctl lock NAME` do: "a/b" keys its nodes
// "a/b/<lease id>", "/a/b" keys them "/a/b/<lease id>".
func CheckName(name string) error {
	_, err := baton.CleanName(name)
	return err
}

// checkDir validates a recipe name (an etcd key prefix).
func checkDir(dir string) error {
	if dir == "" || dir == "/" {
		return fmt.Errorf("%w: empty name", baton.ErrInvalidName)
	}
	for _, seg := range strings.Split(dir, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: name %q has a %q element", baton.ErrInvalidName, dir, seg)
		}
	}
	return checkText(dir)
}

// checkElem validates a child name: a kind or a literal name.
func checkElem(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty child name", baton.ErrInvalidName)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: child name %q contains '/'", baton.ErrInvalidName, name)
	}
	return checkText(name)
}

func checkText(s string) error {
	if len(s) > maxKeyLen {
		return fmt.Errorf("%w: name longer than %d bytes", baton.ErrInvalidName, maxKeyLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: name %q is not UTF-8", baton.ErrInvalidName, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: name %q contains a control character", baton.ErrInvalidName, s)
		}
	}
	return nil
}

// prefix is the key prefix of dir's children.
func prefix(dir string) string { return backend.Join(dir, "") }

// childName returns the name of key if it is a direct child of dir's
// prefix pfx.
func childName(pfx, key string) (string, bool) {
	if !strings.HasPrefix(key, pfx) {
		return "", false
	}
	name := key[len(pfx):]
	if name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// parseName returns the kind of a child name and whether it is one of the
// sequential names this package (or etcd's concurrency package) makes.
func parseName(name string) (kind string, seq bool) {
	if k, ok := parseItemName(name); ok {
		return k, true
	}
	kind, id := backend.KindLock, name
	if i := strings.IndexByte(name, '-'); i >= 0 {
		kind, id = name[:i], name[i+1:]
		known := false
		for _, k := range prefixedKinds {
			known = known || k == kind
		}
		if !known {
			return name, false
		}
	}
	if j := strings.IndexByte(id, '_'); j >= 0 {
		if _, err := strconv.ParseUint(id[j+1:], 10, 32); err != nil {
			return name, false
		}
		id = id[:j]
	}
	if id == "" || len(id) > 32 || (kind == backend.KindLock && len(id) < minLeaseHex) {
		return name, false
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return name, false
		}
	}
	return kind, true
}

// seqName is the first-choice name of a sequential node of kind: on an
// ephemeral node the lease id, as etcd's concurrency package does.
func seqName(kind, id string) string {
	if kind == backend.KindLock {
		return id
	}
	return kind + "-" + id
}

// Delay queue items are persistent keys named from their kind and a
// random id, "dq-<delay ms>-<due unix ms>-<id>", ordered by CreateRevision
// like the other sequential keys. Priority queue items follow etcd's
// recipes layout (pqkeys.go); baton before it named them
// "pq-<priority>-<id>", and such items are still read (listed with their
// priority, in creation order among the others of that priority), so that
// none is lost in an upgrade; new ones are never written so.

// itemName is the name of a delay queue item of kind with id.
func itemName(kind, id string) string {
	d, due, _ := backend.ParseDelayKind(kind)
	return backend.KindDelay + "-" + strconv.FormatInt(max(d, 0), 10) + "-" + strconv.FormatInt(due, 10) + "-" + id
}

// parseItemName reads an item name made by itemName, or a priority item
// of an older baton, "pq-<priority>-<id>".
func parseItemName(name string) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || !isHexID(name[i+1:]) {
		return "", false
	}
	if v, ok := strings.CutPrefix(name[:i], backend.KindPriority+"-"); ok {
		k := backend.KindPriority + ":" + v
		_, ok := backend.ParsePriorityKind(k)
		return k, ok
	}
	if v, ok := strings.CutPrefix(name[:i], backend.KindDelay+"-"); ok {
		d, due, ok := strings.Cut(v, "-")
		if !ok || strings.HasPrefix(d, "-") {
			return "", false
		}
		k := backend.KindDelay + ":" + d + ":" + due
		_, _, ok = backend.ParseDelayKind(k)
		return k, ok
	}
	return "", false
}

// isHexID reports whether id is a random id as reserve makes them: 32
// lower-case hex digits.
func isHexID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// isSeqKind says whether kind has a sequential naming.
func isSeqKind(kind string) bool {
	if backend.IsItemKind(kind) {
		return true
	}
	if kind == backend.KindLock {
		return true
	}
	for _, k := range prefixedKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// reserve picks the key for a new node of kind under dir and reserves it
// for this session until it is known to be deleted. An ephemeral node is
// named from the lease id (suffixed _<n> when that key is taken by another
// node of this session); a persistent one from a random id.
func (c *conn) reserve(dir, kind string, f backend.Flags) (string, error) {
	if !isSeqKind(kind) {
		return "", fmt.Errorf("%w: %q is not a sequential kind", baton.ErrInvalidName, kind)
	}
	pfx := prefix(dir)
	if _, ok := backend.ParsePriorityKind(kind); ok {
		return "", fmt.Errorf("%w: a priority queue item is made by Create alone (etcd's layout allocates its key)", baton.ErrInvalidName)
	}
	if backend.IsItemKind(kind) {
		if f&backend.Ephemeral != 0 {
			return "", fmt.Errorf("%w: a queue item is persistent", baton.ErrInvalidName)
		}
		id := uuid.New()
		return pfx + itemName(kind, hex.EncodeToString(id[:])), nil
	}
	if f&backend.Ephemeral == 0 {
		// A version-7 UUID, in hex without dashes (parseName's id): random
		// as before, and its first 48 bits carry the creation time
		// (createdOf).
		id, err := uuid.NewV7()
		if err != nil {
			id = uuid.New()
		}
		return pfx + seqName(kind, hex.EncodeToString(id[:])), nil
	}
	return c.reserved.addFree(pfx + seqName(kind, c.id)), nil
}

// unreserve frees key for reuse once it is known to be gone.
func (c *conn) unreserve(key string) {
	c.reserved.remove(key)
}

// node describes a key as a child of its dir.
func nodeOf(kv *mvccpb.KeyValue) backend.Node {
	key := string(kv.Key)
	name := key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		name = key[i+1:]
	}
	kind, _ := parseName(name)
	n := backend.Node{
		Path:    key,
		Name:    name,
		Kind:    kind,
		Seq:     kv.CreateRevision,
		Token:   kv.CreateRevision,
		Created: createdOf(name),
		Version: kv.ModRevision,
	}
	if kv.Lease != 0 {
		n.Owner = strconv.FormatInt(kv.Lease, 16)
	}
	return n
}

// createdOf is the creation time a persistent sequential node's name
// carries, or the zero time. etcd keeps no creation time, so baton names
// these nodes (queue items) <kind>-<id> with a version-7 UUID as id, whose
// first 48 bits are the creating process's clock in Unix milliseconds. A
// name with another id (a random version-4 UUID from an older baton, a
// lease id) has none.
func createdOf(name string) time.Time {
	i := strings.IndexByte(name, '-')
	if i < 0 || len(name)-i-1 != 32 {
		return time.Time{}
	}
	id, err := uuid.Parse(name[i+1:])
	if err != nil || id.Version() != 7 || id.Variant() != uuid.RFC4122 {
		return time.Time{}
	}
	return time.Unix(id.Time().UnixTime())
}
