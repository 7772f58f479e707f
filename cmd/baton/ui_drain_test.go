package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/zktest"
)

// TestUIAdminDrainItem: with --admin the page offers to drain a queue
// item; confirmed with the token, that item is deleted, the audit log
// records it (item node and token), and the queue hands out the next one.
func TestUIAdminDrainItem(t *testing.T) {
	t.Parallel()
	for _, st := range uiStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := env("BATON_STORE=" + st.url)
			prefix := "/uiq" + strconv.FormatInt(time.Now().UnixNano(), 36)
			name := prefix + "/jobs"
			if _, stderr, code := run(t, e, "queue", "put", name, "first", "second"); code != 0 {
				t.Fatalf("queue put: exit %d %q", code, stderr)
			}
			const tok = "drain-test-token"
			audit := filepath.Join(t.TempDir(), "audit.log")
			_, url := startUI(t, append(e, "BATON_UI_TOKEN="+tok), "--prefix", prefix, "--admin", "--audit-log", audit)
			if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
				t.Fatal(err)
			}
			waitDOM(t, ctx, `String(document.querySelectorAll("tr.item button.drain-item").length)`, "2", 10*time.Second)
			node := domText(t, ctx, `document.querySelector("tr.item").dataset.node`)
			token := domText(t, ctx, `document.querySelector("tr.item .token").textContent`)
			if err := chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.ID("token"), tok),
				chromedp.Click(chromedp.CSS("tr.item button.drain-item")),
				chromedp.Click(chromedp.CSS("tr.item button.confirm")),
			); err != nil {
				t.Fatal(err)
			}
			log := waitFile(t, audit, `"action":"drain-item"`, 5*time.Second)
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
}

// TestUIDrainRefused: without --admin draining is refused (403) and not
// offered; with it, a node that is not a queue item is not drained (400)
// and stays.
func TestUIDrainRefused(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	name := "uidr/job"
	holder := start(t, e, "lock", name)
	holder.waitOutput("BATON_TOKEN=", 10*time.Second)
	if _, stderr, code := run(t, e, "queue", "put", "uidr/q", "x"); code != 0 {
		t.Fatalf("queue put: %q", stderr)
	}
	post := func(url, auth, body string) (int, string) {
		req, _ := http.NewRequest("POST", url+"api/delete", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, url := startUI(t, e, "--prefix", "uidr")
	if code, s := post(url, "", `{"action":"drain-item","name":"uidr/q","node":"uidr/q/qn-1","token":1}`); code != http.StatusForbidden {
		t.Fatalf("read-only drain: %d %s, want 403", code, s)
	}
	const tok = "drain-refusal-token"
	_, aurl := startUI(t, append(e, "BATON_UI_TOKEN="+tok), "--prefix", "uidr", "--admin")
	status, _, _ := run(t, e, "status", "--json", name)
	i := strings.Index(status, `"node":"`)
	if i < 0 {
		t.Fatalf("status --json: %q", status)
	}
	node := strings.SplitN(status[i+len(`"node":"`):], `"`, 2)[0]
	if code, s := post(aurl, tok, `{"action":"drain-item","name":"uidr/job","node":"`+node+`","token":0}`); code != http.StatusBadRequest {
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
	audit := filepath.Join(t.TempDir(), "audit.log")
	e := env("BATON_STORE=zk://" + addr)
	_, url := startUI(t, append(e, "BATON_UI_TOKEN="+tok), "--prefix", prefix, "--admin", "--audit-log", audit)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, `String(document.querySelectorAll("tr.item button.drain-item").length)`, "1", 10*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.CSS("tr.item button.drain-item")),
		chromedp.Click(chromedp.CSS("tr.item button.confirm")),
	); err != nil {
		t.Fatal(err)
	}
	got := waitDOMPrefix(t, ctx, `document.querySelector("td.refused") ? document.querySelector("td.refused").textContent : ""`, "refused: 403 refused by the store: ", 10*time.Second)
	t.Logf("the page shows: %s", got)
	if log := waitFile(t, audit, `"action":"drain-item"`, 5*time.Second); !strings.Contains(log, `"result":"refused by the store: `) {
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
