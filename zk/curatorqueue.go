package zk

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Priority and delay queue items follow Apache Curator's
// DistributedPriorityQueue and DistributedDelayQueue: a persistent
// sequential node "queue-<tag><seq>" (no protected-mode prefix: Curator's
// consumers take only names starting "queue-") whose data is Curator's
// ItemSerializer framing of the item.
//
//   - priority p: tag "1" or "0" (p ≥ 0 or not) and the 32 bits of p as
//     %08X, so names sort by priority, then sequence;
//   - delay: tag "|<due>|", due the Unix epoch in milliseconds as %08X,
//     Curator's own; baton adds the delay itself before the first bar,
//     "D<delay ms as %X>|<due>|", which Curator ignores (it reads the
//     epoch between the last two bars).
const curatorItemPrefix = "queue-"

// curatorItemName returns the name prefix of an item of kind, and false if
// kind is no queue item kind.
func curatorItemName(kind string) (string, bool) {
	if p, ok := backend.ParsePriorityKind(kind); ok {
		sign := "1"
		if p < 0 {
			sign = "0"
		}
		return fmt.Sprintf("%s%s%08X", curatorItemPrefix, sign, uint32(p)), true
	}
	if d, due, ok := backend.ParseDelayKind(kind); ok {
		tag := ""
		if d >= 0 {
			tag = fmt.Sprintf("D%X", d)
		}
		return fmt.Sprintf("%s%s|%08X|", curatorItemPrefix, tag, due), true
	}
	return "", false
}

// parseCuratorItem reads the head of a "queue-…" name (the name without
// its sequence) as a priority or delay item kind; "" if it is neither
// (Curator's plain DistributedQueue items, "queue-<seq>", among them).
func parseCuratorItem(head string) string {
	tag, ok := strings.CutPrefix(head, curatorItemPrefix)
	if !ok || tag == "" {
		return ""
	}
	if len(tag) == 9 && (tag[0] == '0' || tag[0] == '1') {
		v, ok := upperHex(tag[1:])
		if !ok || v > 0xFFFFFFFF {
			return ""
		}
		p := int32(uint32(v))
		if (p >= 0) != (tag[0] == '1') {
			return ""
		}
		return backend.PriorityKind(p)
	}
	// [D<delay>]|<due>|
	if tag[len(tag)-1] != '|' {
		return ""
	}
	pre, due, ok := strings.Cut(tag[:len(tag)-1], "|")
	if !ok || len(due) < 8 || strings.Contains(due, "|") {
		return ""
	}
	u, ok := upperHex(due)
	if !ok || u > 1<<62 || (len(due) > 8 && due[0] == '0') {
		return ""
	}
	d := int64(-1)
	if pre != "" {
		h, ok := strings.CutPrefix(pre, "D")
		v, valid := upperHex(h)
		if !ok || !valid || v > 1<<62 || (len(h) > 1 && h[0] == '0') {
			return ""
		}
		d = int64(v)
	}
	return delayKindOf(d, int64(u))
}

// delayKindOf is baton's DelayKind from milliseconds.
func delayKindOf(d, due int64) string {
	if d < 0 {
		return backend.KindDelay + ":-1:" + strconv.FormatInt(due, 10)
	}
	return backend.KindDelay + ":" + strconv.FormatInt(d, 10) + ":" + strconv.FormatInt(due, 10)
}

// upperHex parses 1 to 16 upper-case hex digits, as Java's %X writes them.
func upperHex(s string) (uint64, bool) {
	if s == "" || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'A' <= c && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// Curator's ItemSerializer framing: a version, then per item an opcode
// and a length-prefixed payload, then an end opcode; big-endian.
const (
	itemVersion  = 0x00010001
	itemOpcode   = 0x01
	itemEOF      = 0x02
	itemOverhead = 4 + 1 + 4 + 1
)

// encodeItem frames one item as Curator's ItemSerializer does.
func encodeItem(data []byte) []byte {
	b := make([]byte, 0, itemOverhead+len(data))
	b = binary.BigEndian.AppendUint32(b, itemVersion)
	b = append(b, itemOpcode)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	return append(b, itemEOF)
}

// decodeItem reads Curator's framing of exactly one item. A putMulti item
// (several) or a corrupt one is an error wrapping baton.ErrIncompatible.
// Bytes after the end opcode are ignored, as Curator ignores them.
func decodeItem(b []byte) ([]byte, error) {
	bad := func(why string) ([]byte, error) {
		return nil, fmt.Errorf("%w: not one Curator queue item: %s", baton.ErrIncompatible, why)
	}
	if len(b) < 5 || binary.BigEndian.Uint32(b) != itemVersion {
		return bad("no ItemSerializer version")
	}
	b = b[4:]
	if b[0] != itemOpcode {
		return bad("no item")
	}
	if len(b) < 5 {
		return bad("truncated")
	}
	n := binary.BigEndian.Uint32(b[1:])
	b = b[5:]
	if uint64(n) > uint64(len(b)) || n > 1<<31-1 {
		return bad("truncated item")
	}
	data, rest := b[:n], b[n:]
	switch {
	case len(rest) == 0:
		return bad("no end")
	case rest[0] == itemOpcode:
		return bad("several items (putMulti)")
	case rest[0] != itemEOF:
		return bad("bad opcode")
	}
	return data, nil
}
