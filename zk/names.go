package zk

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/backend"
)

// Node names follow Apache Curator's layouts, so Java and Go services share
// one path: a sequential node is "_c_<uuid>-" (Curator's protected-mode
// prefix, which makes a create exactly-once) followed by the kind's marker
// and the server's sequence. Queue items follow ZooKeeper's own
// DistributedQueue: "qn-<seq>", persistent, without the prefix.
const protectedPrefix = "_c_"

// markers maps each recipe kind to the text Curator puts before the
// sequence.
var markers = map[string]string{
	backend.KindLock:  "lock-",    // InterProcessMutex, LockInternals
	backend.KindRead:  "__READ__", // InterProcessReadWriteLock
	backend.KindWrite: "__WRIT__",
	backend.KindLatch: "latch-", // LeaderLatch
	backend.KindLease: "lease-", // InterProcessSemaphoreV2
	backend.KindQueue: "qn-",    // org.apache.zookeeper.recipes.queue
}

// foreign lists every marker we recognise, ours and other clients', longest
// first where one is a suffix of another.
var foreign = []struct{ marker, kind string }{
	{"__rlock__", backend.KindRead}, // kazoo ReadLock
	{"__lock__", backend.KindLock},  // kazoo Lock and WriteLock
	{"__READ__", backend.KindRead},
	{"__WRIT__", backend.KindWrite},
	{"lock-", backend.KindLock}, // Curator, go-zookeeper's Lock
	{"latch-", backend.KindLatch},
	{"lease-", backend.KindLease},
}

// maxSeq is the Seq of a plain (non-sequential) node: after every
// sequential sibling.
const maxSeq = math.MaxInt64

// seqWidth is the width ZooKeeper formats sequences with (%010d).
const seqWidth = 10

// sequentialName returns the name prefix to create a sequential node of
// kind with the per-attempt id, and whether it is protected (carries the
// id). ok is false for a kind that has no sequential form.
func sequentialName(kind, id string) (prefix string, protected, ok bool) {
	if p, ok := curatorItemName(kind); ok {
		return p, false, true
	}
	m, ok := markers[kind]
	if !ok {
		return "", false, false
	}
	if kind == backend.KindQueue {
		return m, false, true
	}
	return protectedPrefix + id + "-" + m, true, true
}

// formatSeq formats a sequence the way the server does (%010d of an int32).
func formatSeq(v int32) string {
	s := strconv.FormatInt(int64(v), 10)
	if v < 0 {
		if len(s) < seqWidth {
			return "-" + strings.Repeat("0", seqWidth-len(s)) + s[1:]
		}
		return s
	}
	if len(s) < seqWidth {
		return strings.Repeat("0", seqWidth-len(s)) + s
	}
	return s
}

// splitSeq splits a name into its head and the server's sequence suffix, if
// the name ends with one in exactly the server's format. A name can end in
// both a 10-digit and an 11-character negative form ("lock--1000000000");
// the split whose head ends with a known marker wins, else the 10-digit one.
func splitSeq(name string) (head string, seq int32, ok bool) {
	for _, w := range []int{seqWidth, seqWidth + 1} {
		if len(name) < w {
			continue
		}
		v, valid := parseSeq(name[len(name)-w:])
		if !valid {
			continue
		}
		h := name[:len(name)-w]
		if !ok || markerKind(h) != "" {
			head, seq, ok = h, v, true
		}
	}
	return head, seq, ok
}

// parseSeq parses tail if it is exactly formatSeq of an int32: 10 digits
// (at most 2147483647), "-" and 9 digits (not all zero), or "-" and 10
// digits from 1000000000 to 2147483648. It does not allocate: listings of
// thousands of queue items go through it.
func parseSeq(tail string) (int32, bool) {
	neg := tail != "" && tail[0] == '-'
	digits := tail
	if neg {
		digits = tail[1:]
	}
	switch {
	case len(tail) == seqWidth && !neg, len(tail) == seqWidth && neg:
	case len(tail) == seqWidth+1 && neg && digits[0] != '0':
	default:
		return 0, false
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		d := digits[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + int64(d-'0')
	}
	if neg {
		v = -v
	}
	if v < math.MinInt32 || v > math.MaxInt32 || (neg && v == 0) {
		return 0, false
	}
	return int32(v), true
}

// markerKind returns the kind whose marker ends head, or "".
func markerKind(head string) string {
	if head == markers[backend.KindQueue] {
		return backend.KindQueue
	}
	for _, f := range foreign {
		if strings.HasSuffix(head, f.marker) {
			return f.kind
		}
	}
	return ""
}

// parsedName is what a child's name says about it.
type parsedName struct {
	kind string // baton kind, the literal name, or "" if unrecognised
	seq  int32  // raw server sequence (valid when sequential)
	// sequential is set when the name ends with a well-formed sequence.
	sequential bool
}

// parseName reads a child's name: our own and Curator's nodes, kazoo's and
// go-zookeeper's lock nodes, ZooKeeper's queue items. A name that ends with
// a sequence but no known marker, or that looks like a contender but has a
// malformed sequence, has kind "" (recipes ignore it). Any other name is a
// plain node: its kind is the name itself.
func parseName(name string) parsedName {
	head, seq, ok := splitSeq(name)
	if strings.HasPrefix(name, curatorItemPrefix) {
		if !ok {
			return parsedName{}
		}
		return parsedName{kind: parseCuratorItem(head), seq: seq, sequential: true}
	}
	if ok {
		return parsedName{kind: markerKind(head), seq: seq, sequential: true}
	}
	if looksSequential(name) {
		return parsedName{}
	}
	return parsedName{kind: name}
}

// looksSequential reports whether a name without a well-formed sequence
// still looks like a recipe's node (a protected prefix or a marker), so it
// must not be taken for a plain node of that name.
func looksSequential(name string) bool {
	if strings.HasPrefix(name, protectedPrefix) || strings.HasPrefix(name, markers[backend.KindQueue]) {
		return true
	}
	for _, f := range foreign {
		if strings.Contains(name, f.marker) {
			return true
		}
	}
	return false
}

// sortChildren builds the nodes of dir from child names, in baton's order:
// sequential nodes by sequence (wrap-corrected), then plain nodes by name.
// When one listing holds sequences from both ends of the int32 range, the
// counter has wrapped: the negative ones are newer and get 2^32 added.
// Queues can hold many thousands of children: this sorts small keys, not
// Nodes.
func sortChildren(dir string, names []string) []backend.Node {
	type key struct {
		seq   int64 // maxSeq for plain nodes
		name  string
		kind  string
		plain bool
	}
	keys := make([]key, len(names))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, name := range names {
		p := parseName(name)
		k := key{seq: maxSeq, name: name, kind: p.kind, plain: !p.sequential}
		if p.sequential {
			k.seq = int64(p.seq)
			lo, hi = min(lo, k.seq), max(hi, k.seq)
		}
		keys[i] = k
	}
	if lo < 0 && hi >= 0 && hi-lo > math.MaxInt32 { // wrapped
		for i := range keys {
			if !keys[i].plain && keys[i].seq < 0 {
				keys[i].seq += 1 << 32
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.plain != b.plain {
			if a.plain {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	nodes := make([]backend.Node, len(keys))
	for i, k := range keys {
		nodes[i] = backend.Node{Path: backend.Join(dir, k.name), Name: k.name, Kind: k.kind, Seq: k.seq}
	}
	return nodes
}
