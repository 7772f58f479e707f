package ui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/store"
)

//go:embed index.html
var files embed.FS

// Handler serves the page, its data and (with admin) its actions.
type Handler struct {
	*http.ServeMux
	b     *reader
	admin *adminTools

	stopChart context.CancelFunc // ends chartFirstPage
	charted   chan struct{}      // closed when it has returned
}

// Config says what the page shows and how it reaches the store.
type Config struct {
	URL     store.URL
	Options store.Options // to open a session or read the Redis servers
	Dial    time.Duration // --dial-timeout
	Prefix  string        // the page shows the instances under it

	Admin     bool      // offer the admin actions
	Token     string    // with Admin: the secret an action must carry ($BATON_UI_TOKEN)
	AuditPath string    // with Admin: the audit log, appended to ("": Stderr)
	Stderr    io.Writer // the audit log without AuditPath
}

// NewHandler returns the page's handler for cfg; Close ends its work. A
// missing or short admin token is a usage error.
func NewHandler(cfg Config) (*Handler, error) {
	b := &reader{u: cfg.URL, in: store.Inspect(cfg.URL, cfg.Options, nil), dial: cfg.Dial, prefix: cfg.Prefix,
		admin: cfg.Admin, chart: newChart()}
	h := &Handler{ServeMux: http.NewServeMux(), b: b}
	if cfg.Admin {
		a, err := newAdmin(b, cfg)
		if err != nil {
			return nil, err
		}
		h.admin = a
	}
	h.HandleFunc("GET /{$}", h.page)
	h.HandleFunc("GET /api/state", h.state)
	h.HandleFunc("GET /api/events", h.events)
	h.HandleFunc("POST /api/delete", h.delete)
	ctx, cancel := context.WithCancel(context.Background())
	h.stopChart, h.charted = cancel, make(chan struct{})
	go h.chartFirstPage(ctx)
	return h, nil
}

// chartFirstPage reads the first page after every change, as an open page
// would, so that its names' contention charts have a history before anyone
// opens the page. Other pages are charted while someone reads them.
func (h *Handler) chartFirstPage(ctx context.Context) {
	defer close(h.charted)
	for ctx.Err() == nil {
		snap := h.b.read(ctx, 1, PerPage)
		if err := h.b.wait(ctx, snap); err != nil && ctx.Err() == nil {
			select { // a failing watch: read again shortly, not in a loop
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// Close stops the handler's own reading and closes its store.
func (h *Handler) Close() {
	h.stopChart()
	<-h.charted
	h.b.close()
	if h.admin != nil {
		h.admin.close()
	}
}

func (h *Handler) page(w http.ResponseWriter, _ *http.Request) {
	b, _ := files.ReadFile("index.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

func pageArgs(r *http.Request) (page, per int) {
	page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	per, _ = strconv.Atoi(r.URL.Query().Get("per_page"))
	return page, per
}

func (h *Handler) state(w http.ResponseWriter, r *http.Request) {
	page, per := pageArgs(r)
	snap := h.b.read(r.Context(), page, per)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(snap.view)
}

// events streams the page's data as Server-Sent Events: once at once,
// then after every change the store's watches report.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	page, per := pageArgs(r)
	ctx := r.Context()
	for ctx.Err() == nil {
		snap := h.b.read(ctx, page, per)
		if ctx.Err() != nil {
			return
		}
		data, _ := json.Marshal(snap.view)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		fl.Flush()
		if err := h.b.wait(ctx, snap); err != nil && !errors.Is(err, context.Canceled) {
			select { // a failing watch: read again shortly, not in a loop
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}
