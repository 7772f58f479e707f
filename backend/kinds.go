package backend

import (
	"strconv"
	"strings"
	"time"
)

// Kinds of the items of PriorityQueue and DelayQueue. Unlike the other
// kinds, they carry a parameter: a node is created with the kind
// PriorityKind(p) or DelayKind(d, due), and a backend lists it with that
// same kind string, parsed back from its dialect's name (Curator's
// "queue-<priority>…" and "queue-…|<epoch>|…" on ZooKeeper).
const (
	KindPriority = "pq" // PriorityQueue item: "pq:<priority>"
	KindDelay    = "dq" // DelayQueue item: "dq:<delay ms>:<due unix ms>"
)

// PriorityKind is the kind of a priority queue item of priority p.
func PriorityKind(p int32) string {
	return KindPriority + ":" + strconv.FormatInt(int64(p), 10)
}

// ParsePriorityKind returns the priority of a PriorityKind kind.
func ParsePriorityKind(kind string) (int32, bool) {
	v, ok := strings.CutPrefix(kind, KindPriority+":")
	if !ok {
		return 0, false
	}
	p, err := strconv.ParseInt(v, 10, 32)
	if err != nil || strconv.FormatInt(p, 10) != v {
		return 0, false
	}
	return int32(p), true
}

// DelayKind is the kind of a delay queue item put with delay d (whole
// milliseconds; negative: not known, an item of a client that records
// only the due time) and due at due (Unix milliseconds on the putter's
// clock).
func DelayKind(d time.Duration, due time.Time) string {
	return delayKind(d.Milliseconds(), due.UnixMilli())
}

func delayKind(dms, due int64) string {
	if dms < 0 {
		dms = -1
	}
	return KindDelay + ":" + strconv.FormatInt(dms, 10) + ":" + strconv.FormatInt(due, 10)
}

// ParseDelayKind returns the delay (negative if not known) and due time
// (Unix milliseconds) of a DelayKind kind.
func ParseDelayKind(kind string) (delayMS, dueMS int64, ok bool) {
	v, ok := strings.CutPrefix(kind, KindDelay+":")
	if !ok {
		return 0, 0, false
	}
	ds, us, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, false
	}
	d, err1 := strconv.ParseInt(ds, 10, 64)
	u, err2 := strconv.ParseInt(us, 10, 64)
	if err1 != nil || err2 != nil || d < -1 || u < 0 || strconv.FormatInt(d, 10) != ds || strconv.FormatInt(u, 10) != us {
		return 0, 0, false
	}
	return d, u, true
}

// IsItemKind reports whether kind is the kind of a PriorityQueue or
// DelayQueue item.
func IsItemKind(kind string) bool {
	_, p := ParsePriorityKind(kind)
	_, _, d := ParseDelayKind(kind)
	return p || d
}
