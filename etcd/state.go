package etcd

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The small pieces of a session's shared state, each with its own lock.

// lifetime is a session's end: the first error given to end, a channel
// closed then and a context cancelled then.
type lifetime struct {
	life    context.Context // cancelled when the session ends
	endLife context.CancelFunc
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error
}

func newLifetime() lifetime {
	life, endLife := context.WithCancel(context.Background())
	return lifetime{life: life, endLife: endLife, done: make(chan struct{})}
}

// Done is closed when the session is over.
func (l *lifetime) Done() <-chan struct{} { return l.done }

// Err is nil while the session lives, then why it ended.
func (l *lifetime) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// end closes the session with err; only the first call counts.
func (l *lifetime) end(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		l.endLife()
		close(l.done)
	})
}

// background runs a session's goroutines (key watch readers, forget's
// deletes) so that Close can wait for them: once stopped, none starts.
type background struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// start runs f in a goroutine, unless stop was called; it reports which.
func (b *background) start(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// stop refuses new goroutines and waits for those running.
func (b *background) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.wg.Wait()
}

// deadline is a time read and written from several goroutines.
type deadline struct {
	mu sync.Mutex
	t  time.Time
}

func (d *deadline) get() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.t
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.t = t
	d.mu.Unlock()
}

// highWater is the highest revision seen so far.
type highWater struct{ v atomic.Int64 }

// raise records that the store had reached revision rev.
func (h *highWater) raise(rev int64) {
	for {
		old := h.v.Load()
		if rev <= old || h.v.CompareAndSwap(old, rev) {
			return
		}
	}
}

// keySet is a set of keys under a lock.
type keySet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (k *keySet) has(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key]
}

// addFree adds the first of base, base_1, base_2… not in the set, and
// returns it.
func (k *keySet) addFree(base string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := base
	for n := 1; k.m[key]; n++ {
		key = base + "_" + strconv.Itoa(n)
	}
	k.m[key] = true
	return key
}

func (k *keySet) remove(key string) {
	k.mu.Lock()
	delete(k.m, key)
	k.mu.Unlock()
}
