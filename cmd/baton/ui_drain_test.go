package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/zktest"
)

// TestUIAdminDrainItem: with --admin the page offers to drain a queue
// item; confirmed with the token, that item is deleted, the audit log
// records it (item node and token), and the queue hands out the next one.
func TestUIAdminDrainItem(t *testing.T) {
	t.Parallel()
	eachUIStore(t, "uiq", func(t *testing.T, r uiRig) {
		ctx, e := r.ctx, r.e
		name := r.prefix + "/jobs"
		if _, stderr, code := run(t, e, "queue", "put", name, "first", "second"); code != 0 {
			t.Fatalf("queue put: exit %d %q", code, stderr)
		}
		const tok = "drain-test-token"
		url, audit := startAdminUI(t, e, tok, "--prefix", r.prefix)
		navigate(t, ctx, url)
		waitDOM(t, ctx, `String(document.querySelectorAll("tr.item button.drain-item").length)`, "2", 10*time.Second)
		node := domText(t, ctx, `document.querySelector("tr.item").dataset.node`)
		token := domText(t, ctx, `document.querySelector("tr.item .token").textContent`)
		confirmAdmin(t, ctx, tok, "tr.item", "button.drain-item")
		log := proctest.WaitFile(t, audit, `"action":"drain-item"`, 5*time.Second)
		for _, want := range []string{`"node":"` + node + `"`, `"token":` + token + `,`, `"result":"deleted"`, `"time":"`, `"who":"`} {
			if !strings.Contains(log, want) {
				t.Fatalf("audit log %q lacks %s", log, want)
			}
		}
		waitDOM(t, ctx, `String(document.querySelectorAll("tr.item").length)`, "1", 5*time.Second)
		out, stderr, code := run(t, e, "queue", "take", name)
		if code != 0 || strings.TrimSpace(out) != "second" {
			t.Fatalf("take after draining the first: %q %q exit %d, want second", out, stderr, code)
		}
	})
}

// TestUIDrainRefused: without --admin draining is refused (403) and not
// offered; with it, a node that is not a queue item is not drained (400)
// and stays.
func TestUIDrainRefused(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	name := "uidr/job"
	holder := startHeld(t, e, "lock", name)
	if _, stderr, code := run(t, e, "queue", "put", "uidr/q", "x"); code != 0 {
		t.Fatalf("queue put: %q", stderr)
	}
	url := startUI(t, e, "--prefix", "uidr")
	if code, s := postDelete(t, url, "", `{"action":"drain-item","name":"uidr/q","node":"uidr/q/qn-1","token":1}`); code != http.StatusForbidden {
		t.Fatalf("read-only drain: %d %s, want 403", code, s)
	}
	const tok = "drain-refusal-token"
	aurl := startUI(t, append(e, "BATON_UI_TOKEN="+tok), "--prefix", "uidr", "--admin")
	status, _, _ := run(t, e, "status", "--json", name)
	i := strings.Index(status, `"node":"`)
	if i < 0 {
		t.Fatalf("status --json: %q", status)
	}
	node := strings.SplitN(status[i+len(`"node":"`):], `"`, 2)[0]
	if code, s := postDelete(t, aurl, tok, `{"action":"drain-item","name":"uidr/job","node":"`+node+`","token":0}`); code != http.StatusBadRequest {
		t.Fatalf("draining a lock holder: %d %s, want 400", code, s)
	}
	waitStatus(t, e, name, 1)
	holder.signal(2)
}

// TestUIDrainRefusedByStore: items put with credentials on ZooKeeper carry
// an ACL that lets others read but not delete; the ui, holding no
// credentials, shows the store's refusal as it is, logs it, and the item
// stays.
func TestUIDrainRefusedByStore(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	addr := zktest.Shared(t).Addr()
	prefix := "/uiqacl" + strconv.FormatInt(time.Now().UnixNano(), 36)
	name := prefix + "/jobs"
	if _, stderr, code := run(t, env("BATON_STORE=zk://alice:pw-alice@"+addr), "queue", "put", name, "kept"); code != 0 {
		t.Fatalf("queue put as alice: exit %d %q", code, stderr)
	}
	const tok = "acl-test-token"
	e := env("BATON_STORE=zk://" + addr)
	url, audit := startAdminUI(t, e, tok, "--prefix", prefix)
	navigate(t, ctx, url)
	waitDOM(t, ctx, `String(document.querySelectorAll("tr.item button.drain-item").length)`, "1", 10*time.Second)
	confirmAdmin(t, ctx, tok, "tr.item", "button.drain-item")
	got := waitDOMPrefix(t, ctx, `document.querySelector("td.refused") ? document.querySelector("td.refused").textContent : ""`, "refused: 403 refused by the store: ", 10*time.Second)
	t.Logf("the page shows: %s", got)
	if log := proctest.WaitFile(t, audit, `"action":"drain-item"`, 5*time.Second); !strings.Contains(log, `"result":"refused by the store: `) {
		t.Fatalf("audit log %q", log)
	}
	if out, _, code := run(t, e, "queue", "len", name); code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("queue len after the refusal: %q exit %d, want 1", out, code)
	}
}

// waitDOMPrefix polls the page until js returns a string starting with
// prefix, and returns it.
func waitDOMPrefix(t *testing.T, ctx context.Context, js, prefix string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if got := domText(t, ctx, js); strings.HasPrefix(got, prefix) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("page: %s never began with %q within %v; page text %q", js, prefix, d, domText(t, ctx, "document.body.innerText"))
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}
