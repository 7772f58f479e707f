package zk

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// frame is a length-prefixed ZooKeeper frame.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

type seen struct {
	body      []byte
	handshake bool
}

func frames(stream []byte, chunk int) []seen {
	var f framer
	f.handshake = true
	var out []seen
	for len(stream) > 0 {
		k := min(chunk, len(stream))
		f.feed(stream[:k], func(body []byte, handshake bool) {
			out = append(out, seen{append([]byte(nil), body...), handshake})
		})
		stream = stream[k:]
	}
	return out
}

// The framer finds the same frames however the stream is cut into reads,
// keeps at most maxKeep bytes of each, and marks only the first as the
// handshake.
func FuzzFramer(f *testing.F) {
	f.Add(frame([]byte("handshake")), uint8(1))
	f.Add(append(frame(nil), frame([]byte{0, 0, 0, 1, 0, 0, 0, 2})...), uint8(3))
	f.Add(append(frame(make([]byte, 5000)), frame([]byte("next"))...), uint8(200))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}, uint8(2)) // negative length
	f.Add([]byte{0, 0, 0}, uint8(1))                         // a partial header
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		whole := frames(stream, len(stream)+1)
		cut := frames(stream, int(chunk)+1)
		if len(whole) != len(cut) {
			t.Fatalf("%d frames whole, %d in chunks of %d", len(whole), len(cut), int(chunk)+1)
		}
		for i := range whole {
			if !bytes.Equal(whole[i].body, cut[i].body) || whole[i].handshake != cut[i].handshake {
				t.Fatalf("frame %d differs in chunks of %d", i, int(chunk)+1)
			}
			if len(whole[i].body) > maxKeep {
				t.Fatalf("frame %d keeps %d bytes", i, len(whole[i].body))
			}
			if whole[i].handshake != (i == 0) {
				t.Fatalf("frame %d: handshake %v", i, whole[i].handshake)
			}
		}
	})
}

// The tap reads a create's czxid from its reply header, and only from a
// successful create's reply; whatever else the server sends, it neither
// panics nor records a czxid for a request that was not a create.
func FuzzTapCreateReply(f *testing.F) {
	f.Add(int32(7), int64(0x1234), "/a/_c_x-lock-0000000001", int32(0), []byte(nil))
	f.Add(int32(1), int64(1), "/q/qn-0000000000", int32(-110), []byte{0, 0, 0, 4, 1, 2})
	f.Add(int32(-1), int64(9), "/watched", int32(0), []byte(nil)) // a notification's xid
	f.Add(int32(3), int64(5), "", int32(0), frame([]byte{0xff, 0xff, 0xff, 0xfe}))
	f.Fuzz(func(t *testing.T, xid int32, zxid int64, path string, code int32, garbage []byte) {
		w := newWire(nil, nil, time.Second)
		c := &tapConn{w: w}
		c.out.handshake, c.in.handshake = true, true
		// Handshake both ways, then a create request and its reply.
		sent := time.Now()
		c.out.feed(frame(make([]byte, 44)), func(b []byte, hs bool) { c.request(sent, b, hs) })
		c.in.feed(frame(make([]byte, 36)), c.reply)
		req := binary.BigEndian.AppendUint32(nil, uint32(xid))
		req = binary.BigEndian.AppendUint32(req, opCreate)
		req = binary.BigEndian.AppendUint32(req, uint32(len(path)))
		req = append(req, path...)
		c.out.feed(frame(req), func(b []byte, hs bool) { c.request(sent, b, hs) })
		rep := binary.BigEndian.AppendUint32(nil, uint32(xid))
		rep = binary.BigEndian.AppendUint64(rep, uint64(zxid))
		rep = binary.BigEndian.AppendUint32(rep, uint32(code))
		if code == 0 {
			rep = binary.BigEndian.AppendUint32(rep, uint32(len(path)))
			rep = append(rep, path...)
		}
		c.in.feed(frame(rep), c.reply)
		got, ok := w.takeZxid(path)
		want := code == 0 && xid != xidNotification && xid != xidPing && 20+len(path) <= maxKeep
		if ok != want || (ok && got != zxid) {
			t.Fatalf("czxid of %q: %d, %v; want %d, %v", path, got, ok, zxid, want)
		}
		if !w.lastConfirmed().Equal(sent) {
			t.Fatalf("last confirmed %v, want the send time %v", w.lastConfirmed(), sent)
		}
		// Garbage afterwards, both ways, records nothing it should not.
		c.in.feed(garbage, c.reply)
		c.out.feed(garbage, func(b []byte, hs bool) { c.request(sent, b, hs) })
		if n := len(w.zxids); n != 0 {
			t.Fatalf("%d czxids recorded from replies to no create", n)
		}
	})
}
