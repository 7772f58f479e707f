// Package proxy is a TCP proxy on loopback for fault tests: it sits between
// a client and a real server and can cut, blackhole or half-drop the
// traffic on command.
package proxy

import (
	"net"
	"sync"
	"testing"
)

// Mode is what the proxy does with traffic.
type Mode int

// Proxy modes.
const (
	Pass        Mode = iota // forward both ways
	Blackholed              // keep connections open, forward nothing
	DropReplies             // forward client→server, drop server→client
	Refuse                  // close every connection, refuse new ones
)

// Proxy forwards connections from its own loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	conns map[*pair]struct{}
	wake  *sync.Cond
	done  bool
}

type pair struct{ client, server net.Conn }

// Start listens on a free loopback port and forwards to target. It stops on
// t.Cleanup.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New listens on a free loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}}
	p.wake = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// Addr is the address clients should dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole stops forwarding in both directions; connections stay open.
func (p *Proxy) Blackhole() { p.set(Blackholed) }

// DropReplies forwards client→server but discards server→client bytes.
func (p *Proxy) DropReplies() { p.set(DropReplies) }

// Cut closes every connection and refuses new ones until Heal.
func (p *Proxy) Cut() { p.set(Refuse) }

// Heal returns to forwarding both ways.
func (p *Proxy) Heal() { p.set(Pass) }

// Close stops the proxy and closes all connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	p.set(Refuse)
	_ = p.ln.Close()
}

func (p *Proxy) set(m Mode) {
	p.mu.Lock()
	p.mode = m
	var drop []*pair
	if m == Refuse {
		for c := range p.conns {
			drop = append(drop, c)
			delete(p.conns, c)
		}
	}
	p.wake.Broadcast()
	p.mu.Unlock()
	for _, c := range drop {
		_ = c.client.Close()
		_ = c.server.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.mode == Refuse || p.done
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		p.conns[pr] = struct{}{}
		p.mu.Unlock()
		go p.pipe(pr, c, s, false)
		go p.pipe(pr, s, c, true)
	}
}

// pipe copies src to dst, consulting the mode before every chunk. A chunk
// read while blackholed waits for the mode to change, so nothing is
// delivered until Heal; a reply read while dropping is discarded.
func (p *Proxy) pipe(pr *pair, src, dst net.Conn, reply bool) {
	buf := make([]byte, 32<<10)
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.mu.Lock()
		delete(p.conns, pr)
		p.mu.Unlock()
	}()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == Blackholed {
				p.wake.Wait()
			}
			m := p.mode
			p.mu.Unlock()
			if m == Refuse {
				return
			}
			if !(m == DropReplies && reply) {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
