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
)

// The rig of the browser tests: a browser on each ui store, the locks
// shown, and the ui's page.

// uiRig is one browser test's rig on one store.
type uiRig struct {
	ctx    context.Context // the browser
	e      []string        // baton's environment, naming the store
	prefix string          // a prefix of this test's own
}

// eachUIStore runs f as a parallel subtest on every ui store, each with a
// browser of its own and a fresh prefix ("/" + tag + the time).
func eachUIStore(t *testing.T, tag string, f func(t *testing.T, r uiRig)) {
	for _, st := range uiStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			f(t, uiRig{ctx: ctx, e: env("BATON_STORE=" + st.url), prefix: "/" + tag + strconv.FormatInt(time.Now().UnixNano(), 36)})
		})
	}
}

// startAdminUI runs baton ui --admin with the token tok and an audit log
// of its own; it returns the page's address and the log's path.
func startAdminUI(t *testing.T, e []string, tok string, args ...string) (url, audit string) {
	t.Helper()
	audit = filepath.Join(t.TempDir(), "audit.log")
	url = startUI(t, append(e, "BATON_UI_TOKEN="+tok), append(args, "--admin", "--audit-log", audit)...)
	return url, audit
}

// navigate opens url in the browser ctx.
func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
}

// confirmAdmin enters the admin token tok, clicks button in row (CSS
// selectors) and confirms.
func confirmAdmin(t *testing.T, ctx context.Context, tok, row, button string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.CSS(row+" "+button)),
		chromedp.Click(chromedp.CSS(row+" button.confirm")),
	); err != nil {
		t.Fatal(err)
	}
}

// postDelete posts body to the ui's api/delete at url, with the admin
// token auth unless it is "", and returns the answer's status and body.
func postDelete(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"api/delete", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
