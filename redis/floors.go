package redis

import "sync"

// floors are, per lock key, the highest fencing token a Client was
// granted. A grant whose token is not above it (the server restarted
// empty and reseeded the counter from a clock that went back) raises the
// counter above it first (seed.lua), so the tokens a Client is granted on
// a key never go backwards, whatever the server's clock does, for as long
// as the Client lives and remembers the key (up to maxWaited keys; past
// that, one is forgotten for each new one).
type floors struct {
	mu sync.Mutex
	m  map[string]int64
}

func (f *floors) get(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// raise records tok as granted on key.
func (f *floors) raise(key string, tok int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]int64{}
	}
	if old, ok := f.m[key]; ok {
		f.m[key] = max(old, tok)
		return
	}
	if len(f.m) >= maxWaited {
		for k := range f.m {
			delete(f.m, k)
			break
		}
	}
	f.m[key] = tok
}
