package ui

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/cmd/baton/internal/exit"
)

// adminTools holds what --admin needs: the token and the audit log.
type adminTools struct {
	b     *reader
	token string
	mu    sync.Mutex
	log   io.Writer
	file  *os.File
}

func newAdmin(b *reader, cfg Config) (*adminTools, error) {
	if len(cfg.Token) < 8 {
		return nil, exit.Usagef("ui: --admin needs $BATON_UI_TOKEN set to a secret of 8 characters or more")
	}
	a := &adminTools{b: b, token: cfg.Token, log: cfg.Stderr}
	if cfg.AuditPath != "" {
		f, err := os.OpenFile(cfg.AuditPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("ui: audit log: %w", err)
		}
		a.log, a.file = f, f
	}
	return a, nil
}

func (a *adminTools) close() {
	if a.file != nil {
		_ = a.file.Close()
	}
}

// action is a request to delete one node: a holder's (force-release), a
// waiter's (removal) or a queue item's (drain). Token names the
// incarnation seen on the page.
type action struct {
	Action string `json:"action"` // "force-release", "remove-waiter" or "drain-item"
	Name   string `json:"name"`
	Node   string `json:"node"`
	Token  int64  `json:"token"`
}

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	Who    string    `json:"who"`
	Action string    `json:"action"`
	Name   string    `json:"name"`
	Node   string    `json:"node"`
	Token  int64     `json:"token"`
	Result string    `json:"result"`
}

// actions are the admin actions, each the deletion of one node.
var actions = map[string]bool{"force-release": true, "remove-waiter": true, "drain-item": true}

// delete force-releases a holder, removes a waiter or drains a queue item:
// it deletes that incarnation of the node (never a newer one of the same
// name). Without --admin it is refused (403); a wrong token is 401.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	a := h.admin
	if a == nil {
		http.Error(w, "admin actions are off (start baton ui with --admin)", http.StatusForbidden)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
		http.Error(w, "bad or missing token", http.StatusUnauthorized)
		return
	}
	var act action
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&act); err != nil ||
		!actions[act.Action] || act.Node == "" || !strings.HasPrefix(act.Node, h.b.prefix) {
		http.Error(w, "bad request: want {action: force-release|remove-waiter|drain-item, name, node, token} under the prefix", http.StatusBadRequest)
		return
	}
	who := r.RemoteAddr
	if u := r.Header.Get("X-Baton-User"); u != "" {
		who = u + "@" + who
	}
	code, result := h.b.deleteNode(r, act)
	a.mu.Lock()
	_ = json.NewEncoder(a.log).Encode(AuditRecord{Time: time.Now().UTC(), Who: who, Action: act.Action,
		Name: act.Name, Node: act.Node, Token: act.Token, Result: result})
	a.mu.Unlock()
	if code != http.StatusOK {
		http.Error(w, result, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, "{\"result\":%q}\n", result)
}

// deleteNode deletes the node if it is still the incarnation with the
// token the page showed.
func (b *reader) deleteNode(r *http.Request, act action) (int, string) {
	c, err := b.in.Conn(r.Context())
	if err != nil {
		return http.StatusBadGateway, "store: " + err.Error()
	}
	_, n, err := c.Get(r.Context(), act.Node)
	switch {
	case errors.Is(err, baton.ErrNotFound):
		return http.StatusConflict, "gone: the node no longer exists"
	case errors.Is(err, baton.ErrPermission):
		return http.StatusForbidden, "refused by the store: " + err.Error()
	case err != nil:
		return http.StatusBadGateway, "store: " + err.Error()
	}
	if act.Token != 0 && n.Token != 0 && n.Token != act.Token {
		return http.StatusConflict, fmt.Sprintf("changed: the node now has token %d, not %d", n.Token, act.Token)
	}
	if act.Action == "drain-item" && n.Kind != backend.KindQueue {
		return http.StatusBadRequest, fmt.Sprintf("not a queue item: %s is a %q node", n.Path, n.Kind)
	}
	if err := c.Delete(r.Context(), n); err != nil {
		if errors.Is(err, baton.ErrPermission) {
			return http.StatusForbidden, "refused by the store: " + err.Error()
		}
		return http.StatusBadGateway, "store: " + err.Error()
	}
	return http.StatusOK, "deleted"
}
