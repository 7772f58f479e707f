package zk

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/batonhq/baton"
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
	baton.KindLock:  "lock-",    // InterProcessMutex, LockInternals
	baton.KindRead:  "__READ__", // InterProcessReadWriteLock
	baton.KindWrite: "__WRIT__",
	baton.KindLatch: "latch-", // LeaderLatch
	baton.KindLease: "lease-", // InterProcessSemaphoreV2
	baton.KindQueue: "qn-",    // org.apache.zookeeper.recipes.queue
}

// foreign lists every marker we recognise, ours and other clients', longest
// first where one is a suffix of another.
var foreign = []struct{ marker, kind string }{
	{"__rlock__", baton.KindRead}, // kazoo ReadLock
	{"__lock__", baton.KindLock},  // kazoo Lock and WriteLock
	{"__READ__", baton.KindRead},
	{"__WRIT__", baton.KindWrite},
	{"lock-", baton.KindLock}, // Curator, go-zookeeper's Lock
	{"latch-", baton.KindLatch},
	{"lease-", baton.KindLease},
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
	m, ok := markers[kind]
	if !ok {
		return "", false, false
	}
	if kind == baton.KindQueue {
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
		tail := name[len(name)-w:]
		v, err := strconv.ParseInt(tail, 10, 32)
		if err != nil || formatSeq(int32(v)) != tail {
			continue
		}
		h := name[:len(name)-w]
		if !ok || markerKind(h) != "" {
			head, seq, ok = h, int32(v), true
		}
	}
	return head, seq, ok
}

// markerKind returns the kind whose marker ends head, or "".
func markerKind(head string) string {
	if head == markers[baton.KindQueue] {
		return baton.KindQueue
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
	if strings.HasPrefix(name, protectedPrefix) || strings.HasPrefix(name, markers[baton.KindQueue]) {
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
func sortChildren(dir string, names []string) []baton.Node {
	nodes := make([]baton.Node, 0, len(names))
	seqs := make([]bool, 0, len(names))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, name := range names {
		p := parseName(name)
		n := baton.Node{Path: baton.Join(dir, name), Name: name, Kind: p.kind}
		if p.sequential {
			n.Seq = int64(p.seq)
			lo, hi = min(lo, n.Seq), max(hi, n.Seq)
		} else {
			n.Seq = maxSeq
		}
		nodes = append(nodes, n)
		seqs = append(seqs, p.sequential)
	}
	wrapped := lo < 0 && hi >= 0 && hi-lo > math.MaxInt32
	type entry struct {
		n   baton.Node
		seq bool
	}
	es := make([]entry, len(nodes))
	for i := range nodes {
		if wrapped && seqs[i] && nodes[i].Seq < 0 {
			nodes[i].Seq += 1 << 32
		}
		es[i] = entry{nodes[i], seqs[i]}
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.seq != b.seq {
			return a.seq
		}
		if a.seq && a.n.Seq != b.n.Seq {
			return a.n.Seq < b.n.Seq
		}
		return a.n.Name < b.n.Name
	})
	for i := range es {
		nodes[i] = es[i].n
	}
	return nodes
}
