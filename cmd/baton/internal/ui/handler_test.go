package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/store"
)

// TestHandlerCloseLeavesNothing: a page on a store that does not answer
// says so in its data, and once Close returns no goroutine of the
// handler's (its charting reader, the store's clients) is left.
func TestHandlerCloseLeavesNothing(t *testing.T) {
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	u, err := store.Parse(fmt.Sprintf("redis://127.0.0.1:%d", ports[0])) // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(Config{URL: u, Options: store.Options{DialTimeout: time.Second}, Dial: time.Second, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/state", nil))
	var v View
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("state: %d %q: %v", rec.Code, rec.Body, err)
	}
	if !strings.HasPrefix(v.Error, "cannot read "+u.String()) {
		t.Fatalf("state of a store that does not answer: error %q", v.Error)
	}
	h.Close()
	goleak.VerifyNone(t)
}
