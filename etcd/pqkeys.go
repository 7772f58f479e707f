package etcd

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// PriorityQueue items follow etcd's own priority queue
// (go.etcd.io/etcd/client/v3/experimental/recipes, NewPriorityQueue(cli,
// NAME)): an item of priority p is the persistent key
//
//	NAME/<p as %05d>/<seq as %016d>
//
// whose value is the item's bytes, seq being one more than the last seq
// of that priority (0 when there is none), allocated in a Txn guarded by
// the ModRevision of the base key "__NAME/<p as %05d>" and writing it. Key
// order is the order of delivery: lower priority first, then the order
// put, as etcd's Dequeue takes the first key under "NAME/". So baton's
// priority p is etcd's pr unchanged, and only 0 to 99999 fit (etcd's own
// Enqueue writes 0 to 65535, a uint16).
//
// Such an item is listed as a child of NAME named "<p>.<seq>" (both as in
// the key), of kind baton.PriorityKind(p): the name of its claim,
// NAME.claims/<p>.<seq>. Items of older baton versions, NAME/pq-<p>-<id>,
// are still listed and delivered (see parseItemName); new ones are never
// written so.
const (
	// MinPriority and MaxPriority bound the priorities of a
	// baton.PriorityQueue on etcd; Put refuses others with an error
	// wrapping baton.ErrInvalidPriority.
	MinPriority = 0
	MaxPriority = 99999

	pqPrioDigits = 5
	pqSeqDigits  = 16
)

// pqPrefix is the key prefix of the items of priority p under dir:
// "dir/<p as %05d>", without the slash before seq (etcd's Enqueue prefix).
func pqPrefix(dir string, p int32) string {
	return fmt.Sprintf("%s%0*d", prefix(dir), pqPrioDigits, p)
}

// pqKey is the key of item seq of priority p under dir.
func pqKey(dir string, p int32, seq int64) string {
	return fmt.Sprintf("%s/%0*d", pqPrefix(dir, p), pqSeqDigits, seq)
}

// pqName is the child name of item seq of priority p.
func pqName(p int32, seq int64) string {
	return fmt.Sprintf("%0*d.%0*d", pqPrioDigits, p, pqSeqDigits, seq)
}

// checkPriority says why p cannot be an etcd priority queue item's.
func checkPriority(p int32) error {
	if p < MinPriority || p > MaxPriority {
		return fmt.Errorf("%w: %d: etcd's priority queue layout takes %d to %d (lower comes out first)",
			baton.ErrInvalidPriority, p, MinPriority, MaxPriority)
	}
	return nil
}

// parsePQRest reads the part of a key after its queue's prefix as an item
// of etcd's layout, "<5 digits>/<16 digits>".
func parsePQRest(rest string) (p int32, seq int64, ok bool) {
	ps, ss, found := strings.Cut(rest, "/")
	if !found || len(ps) != pqPrioDigits || len(ss) != pqSeqDigits {
		return 0, 0, false
	}
	pv, ok1 := decimal(ps)
	sv, ok2 := decimal(ss)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return int32(pv), sv, true
}

// parseSeq reads the last element of a key in etcd's layout as its seq.
func parseSeq(key string) (int64, bool) {
	s := key[strings.LastIndexByte(key, '/')+1:]
	if len(s) != pqSeqDigits {
		return 0, false
	}
	return decimal(s)
}

// decimal parses at most 18 ASCII digits (no sign).
func decimal(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// pqChild returns the child name and kind of key if it is an item of
// etcd's priority queue layout under the prefix pfx.
func pqChild(pfx, key string) (name, kind string, ok bool) {
	rest, found := strings.CutPrefix(key, pfx)
	if !found {
		return "", "", false
	}
	p, seq, ok := parsePQRest(rest)
	if !ok {
		return "", "", false
	}
	return pqName(p, seq), backend.PriorityKind(p), true
}

// pqItem is pqChild for a key read from the store: an item is persistent,
// which tells it from a contender of a recipe named NAME/<5 digits>, whose
// keys are on a lease (and may be 16 decimal digits, as lease ids in hex
// can be).
func pqItem(pfx string, kv *mvccpb.KeyValue) (name, kind string, ok bool) {
	if kv.Lease != 0 {
		return "", "", false
	}
	return pqChild(pfx, string(kv.Key))
}
