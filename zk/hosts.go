package zk

import (
	"errors"
	"math/rand/v2"
	"sync"
)

// hostProvider hands go-zookeeper the servers in turn. Unlike its default,
// it redials at once after a connection that worked is lost, and pauses (a
// second, in go-zookeeper) only after every server has been tried in vain:
// with one server the default pauses before every reconnect, which eats a
// second of a short session's timeout.
type hostProvider struct {
	mu      sync.Mutex
	servers []string
	curr    int
	tried   int // attempts since the last successful connection
}

func (hp *hostProvider) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zk: no servers given")
	}
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.servers = append([]string(nil), servers...)
	rand.Shuffle(len(hp.servers), func(i, j int) { hp.servers[i], hp.servers[j] = hp.servers[j], hp.servers[i] })
	hp.curr = -1
	return nil
}

func (hp *hostProvider) Len() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return len(hp.servers)
}

func (hp *hostProvider) Next() (string, bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	n := len(hp.servers)
	hp.curr = (hp.curr + 1) % n
	hp.tried++
	return hp.servers[hp.curr], hp.tried > n && (hp.tried-1)%n == 0
}

func (hp *hostProvider) Connected() {
	hp.mu.Lock()
	hp.tried = 0
	hp.mu.Unlock()
}
