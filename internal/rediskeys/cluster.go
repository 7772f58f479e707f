package rediskeys

import (
	"strconv"
	"strings"
	"sync"
)

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// Slot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag, the part between the first "{" and the first "}" after it when
// that part is not empty, else of the whole key, modulo Slots (as the
// server's CLUSTER KEYSLOT computes it).
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var tags struct {
	once sync.Once
	of   [Slots]string
}

// Tag is baton's hash tag for a slot: the first of the base-36 numbers
// 0, 1, …, 9, a, …, z, 10, … whose slot it is. "{" + Tag(s) + "}…" is a
// key or channel in slot s. The table is built on first use (about a
// millisecond).
func Tag(slot int) string {
	tags.once.Do(func() {
		left := Slots
		for i := int64(0); left > 0; i++ {
			t := strconv.FormatInt(i, 36)
			if s := crc16(t) % Slots; tags.of[s] == "" {
				tags.of[s] = t
				left--
			}
		}
	})
	return tags.of[slot]
}

// ClusterPrefix is what the other keys of the lock named name start
// with on Redis Cluster, so that they are in the slot of the lock's own
// key (the name): the name as a hash tag, "{jobs/x}", when it holds no
// brace; else baton's tag of the name's slot followed by the name,
// "{<Tag(Slot(name))>}a{b}" for "a{b}". Either way the prefix names the
// lock once, so no two names share a key.
func ClusterPrefix(name string) string {
	if strings.ContainsAny(name, "{}") {
		return "{" + Tag(Slot(name)) + "}" + name
	}
	return "{" + name + "}"
}

// ClusterKeys are the keys of the token counter and of the line of the
// lock named name on Redis Cluster: ClusterPrefix(name) + Token and +
// Queue, "{jobs/x}:token" and "{jobs/x}:queue".
func ClusterKeys(name string) (token, queue string) {
	p := ClusterPrefix(name)
	return p + Token, p + Queue
}

// Channel is the sharded pub/sub channel in slot slot that wakes the
// waiters of the Client whose random id is id:
// "baton:wake:{<Tag(slot)>}:<id>".
func Channel(slot int, id string) string {
	return "baton:wake:{" + Tag(slot) + "}:" + id
}

// ClusterName is the name of the lock whose token counter or line is key
// on Redis Cluster (ClusterKeys), and whether key is one.
func ClusterName(key string) (string, bool) {
	var rest string
	switch {
	case strings.HasSuffix(key, Token):
		rest = strings.TrimSuffix(key, Token)
	case strings.HasSuffix(key, Queue):
		rest = strings.TrimSuffix(key, Queue)
	default:
		return "", false
	}
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	var name string
	if strings.HasSuffix(rest, "}") && !strings.ContainsAny(rest[1:len(rest)-1], "{}") {
		name = rest[1 : len(rest)-1]
	} else if _, after, ok := strings.Cut(rest, "}"); ok {
		name = after
	}
	if name == "" || ClusterPrefix(name) != rest {
		return "", false
	}
	return name, true
}
