package reliability

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
)

// Resource is a fenced resource on loopback HTTP: it accepts a write only
// with a token at least as high as the highest it has seen, the way a
// storage system guarded by fencing tokens should.
type Resource struct {
	srv *httptest.Server

	mu       sync.Mutex
	highest  int64
	attempts map[string]int
	accepted map[string]int
	rejected map[string]int
}

// NewResource serves a Resource on a free loopback port.
func NewResource() *Resource {
	r := &Resource{attempts: map[string]int{}, accepted: map[string]int{}, rejected: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the write endpoint: POST URL?token=N&who=W.
func (r *Resource) URL() string { return r.srv.URL + "/write" }

// Close stops the server.
func (r *Resource) Close() { r.srv.Close() }

func (r *Resource) serve(w http.ResponseWriter, req *http.Request) {
	tok, err := strconv.ParseInt(req.URL.Query().Get("token"), 10, 64)
	if err != nil {
		http.Error(w, "bad token", http.StatusBadRequest)
		return
	}
	if r.Write(req.URL.Query().Get("who"), tok) {
		fmt.Fprintln(w, "ok")
		return
	}
	http.Error(w, "stale token", http.StatusConflict)
}

// Write applies a write from who with token and reports whether it was
// accepted.
func (r *Resource) Write(who string, token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[who]++
	if token < r.highest {
		r.rejected[who]++
		return false
	}
	r.highest = token
	r.accepted[who]++
	return true
}

// Counts returns who's attempted, accepted and rejected writes.
func (r *Resource) Counts(who string) (attempted, accepted, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[who], r.accepted[who], r.rejected[who]
}
