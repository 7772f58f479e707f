package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/cmd/baton/internal/ui"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/zktest"
)

// browser starts headless Chromium (Debian's chromium) with a fresh
// profile; the test's cleanup ends it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	testenv.Require(t, "chromium (apt-get install chromium)", err)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 700),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// startUI runs baton ui with args on a free port (the test's cleanup
// ends it) and returns its address.
func startUI(t *testing.T, e []string, args ...string) string {
	t.Helper()
	p := start(t, e, append([]string{"ui", "--listen", "127.0.0.1:0"}, args...)...)
	p.waitOutput("Ctrl-C stops", 30*time.Second)
	out := p.stdout.String()
	i := strings.Index(out, "http://")
	return out[i : i+strings.Index(out[i:], " ")]
}

// uiStores are the stores the browser tests run on.
func uiStores(t *testing.T) []struct{ name, url string } {
	return []struct{ name, url string }{
		{"zk", "zk://" + zktest.Shared(t).Addr()},
		{"etcd", "etcd://" + sharedEtcd(t)},
	}
}

// domText evaluates js in the page, bounded.
func domText(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(cctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// waitDOM polls the page (every 20 ms, up to d) until js returns want.
func waitDOM(t *testing.T, ctx context.Context, js, want string, d time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := domText(t, ctx, js)
		if got == want {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("page: %s = %q, want %q within %v; page text %q", js, got, want, d,
				domText(t, ctx, "document.body.innerText"))
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}

// rolesJS lists an instance's rows as "role:identity-pid" lines.
func rolesJS(name string) string {
	return fmt.Sprintf(`(() => { const b = [...document.querySelectorAll(".instance")].find(e => e.dataset.name === %q);
  if (!b) return "absent";
  return [...b.querySelectorAll("tr.entry")].map(r => r.dataset.role + ":" + (r.querySelector(".identity").textContent.match(/pid (\d+)/) || ["", "?"])[1]).join(",") })()`, name)
}

func pid(p *proc) int { return p.cmd.Process.Pid }

// TestUIShowsHoldersAndHandoff: the page lists the holder and the waiter
// with their pids, and shows the hand-off within a second of the waiter
// taking the lock (pushed over Server-Sent Events, not reloaded).
func TestUIShowsHoldersAndHandoff(t *testing.T) {
	t.Parallel()
	eachUIStore(t, "uih", func(t *testing.T, r uiRig) {
		ctx, e := r.ctx, r.e
		name := r.prefix + "/job"
		holder := startHeld(t, e, "lock", name)
		waiter := start(t, e, "lock", name)
		waitStatus(t, e, name, 2)
		navigate(t, ctx, startUI(t, e, "--prefix", r.prefix))
		want := fmt.Sprintf("holder:%d,waiter:%d", pid(holder), pid(waiter))
		waitDOM(t, ctx, rolesJS(name), want, 10*time.Second)
		if s := domText(t, ctx, `document.getElementById("live").textContent`); s != "live" {
			t.Fatalf("live badge %q", s)
		}
		if n := domText(t, ctx, `String(document.querySelectorAll("button.act").length)`); n != "0" {
			t.Fatalf("read-only page offers %s actions", n)
		}
		holder.signal(2)
		waiter.waitOutput("BATON_TOKEN=", 10*time.Second)
		took := time.Now()
		seen := waitDOM(t, ctx, rolesJS(name), fmt.Sprintf("holder:%d", pid(waiter)), 5*time.Second)
		lag := seen.Sub(took)
		t.Logf("the page showed the hand-off %v after the waiter printed its token", lag)
		if lag > time.Second {
			t.Fatalf("the page showed the hand-off %v after it happened", lag)
		}
		if tl := domText(t, ctx, `document.querySelector(".timeline") ? document.querySelector(".timeline").textContent : ""`); !strings.Contains(tl, "pid "+strconv.Itoa(pid(waiter))) {
			t.Fatalf("timeline %q", tl)
		}
		waiter.signal(2)
	})
}

// TestUIAdminForceRelease: with --admin the page offers force-release;
// confirmed with the token, it deletes the holder's node, the next waiter
// takes the lock, and the audit log records it.
func TestUIAdminForceRelease(t *testing.T) {
	t.Parallel()
	eachUIStore(t, "uia", func(t *testing.T, r uiRig) {
		ctx, e := r.ctx, r.e
		name := r.prefix + "/job"
		holder := start(t, e, "lock", name, "--", "sleep", "60")
		waitStatus(t, e, name, 1)
		waiter := start(t, e, "lock", name)
		waitStatus(t, e, name, 2)
		const tok = "s3cret-token-for-test"
		url, audit := startAdminUI(t, e, tok, "--prefix", r.prefix)
		navigate(t, ctx, url)
		waitDOM(t, ctx, rolesJS(name), fmt.Sprintf("holder:%d,waiter:%d", pid(holder), pid(waiter)), 10*time.Second)
		confirmAdmin(t, ctx, tok, "tr.holder", "button.force-release")
		waiter.waitOutput("BATON_TOKEN=", 10*time.Second)
		waitDOM(t, ctx, rolesJS(name), fmt.Sprintf("holder:%d", pid(waiter)), 5*time.Second)
		if code := holder.wait(15 * time.Second); code == 0 {
			t.Fatalf("the force-released holder exited 0; stderr %q", holder.stderr.String())
		}
		log := proctest.WaitFile(t, audit, `"action":"force-release"`, 5*time.Second)
		var rec ui.AuditRecord
		if err := json.Unmarshal([]byte(strings.SplitN(log, "\n", 2)[0]), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Name != name || rec.Result != "deleted" || rec.Token == 0 || rec.Who == "" || rec.Time.IsZero() || strings.Contains(log, tok) {
			t.Fatalf("audit record %+v (%q)", rec, log)
		}
		waiter.signal(2)
	})
}

// TestUIReadOnlyRefusesDelete: without --admin the page offers no action
// and the endpoint refuses one (403); with --admin a wrong token is 401.
func TestUIReadOnlyRefusesDelete(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	name := "uiro/job"
	holder := startHeld(t, e, "lock", name)
	url := startUI(t, e, "--prefix", "uiro")
	body := `{"action":"force-release","name":"uiro/job","node":"uiro/job/x","token":1}`
	if code, s := postDelete(t, url, "", body); code != http.StatusForbidden {
		t.Fatalf("read-only delete: %d %s, want 403", code, s)
	}
	if _, stderr, code := run(t, e, "ui", "--admin", "--listen", "127.0.0.1:0"); code != 2 || !strings.Contains(stderr, "BATON_UI_TOKEN") {
		t.Fatalf("--admin without a token: %d %q", code, stderr)
	}
	aurl := startUI(t, append(e, "BATON_UI_TOKEN=right-token-1"), "--prefix", "uiro", "--admin")
	if code, s := postDelete(t, aurl, "wrong-token", body); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s, want 401", code, s)
	}
	waitStatus(t, e, name, 1)
	holder.signal(2)
}

// TestUIEscapesNames: a name with markup and a script shows as text.
func TestUIEscapesNames(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e, _ := etcdEnv(t)
	name := `/uiesc/<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	holder := startHeld(t, e, "lock", name)
	url := startUI(t, e, "--prefix", "/uiesc")
	navigate(t, ctx, url)
	waitDOM(t, ctx, `document.querySelector(".instance h2") ? document.querySelector(".instance h2").textContent : ""`, name, 10*time.Second)
	if got := domText(t, ctx, `String(window.pwned) + " " + document.querySelectorAll("#instances img, #instances script").length`); got != "undefined 0" {
		t.Fatalf("markup in a name ran or rendered: %q", got)
	}
	holder.signal(2)
}

// TestUIDeadStore: a store nobody answers on shows an error on the page.
func TestUIDeadStore(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	dead, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	e := env("BATON_STORE=etcd://" + dead)
	url := startUI(t, e, "--dial-timeout", "500ms")
	navigate(t, ctx, url)
	waitDOM(t, ctx, `document.getElementById("error").style.display`, "block", 15*time.Second)
	// It names why, as the other commands do: the last connection error.
	if s := domText(t, ctx, `document.getElementById("error").textContent`); !strings.HasPrefix(s, "Store error: cannot read") ||
		!strings.Contains(s, "connection refused") {
		t.Fatalf("error text %q", s)
	}
}

// TestUIPaginates: 10,000 instances under a prefix, and one instance of
// 10,000 nodes, are served a page (and 50 nodes) at a time; the page
// size a client asks for is capped.
func TestUIPaginates(t *testing.T) {
	t.Parallel()
	addr := sharedEtcd(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ops []clientv3.Op
	flush := func() {
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range 10000 {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("uibig/n%05d/lock-%x", i, i+1), ""),
			clientv3.OpPut(fmt.Sprintf("uibig1/one/lock-%x", i+1), ""))
		if len(ops) >= 100 {
			flush()
		}
	}
	flush()
	e := env("BATON_STORE=etcd://" + addr)
	url := startUI(t, e, "--prefix", "uibig")
	get := func(q string) ui.View {
		resp, err := http.Get(url + "api/state?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v ui.View
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := get("page=3")
	if v.Error != "" || v.Total != 10001 || v.Pages != 401 || v.Page != 3 || len(v.Instances) != ui.PerPage ||
		v.Instances[0].Name != "uibig/n00050" {
		t.Fatalf("page 3: error %q total %d pages %d page %d instances %d first %q", v.Error, v.Total, v.Pages, v.Page, len(v.Instances), v.Instances[0].Name)
	}
	if v := get("page=1&per_page=100000"); len(v.Instances) != ui.MaxPerPage {
		t.Fatalf("per_page capped at %d, got %d", ui.MaxPerPage, len(v.Instances))
	}
	v = get("page=401")
	one := v.Instances[len(v.Instances)-1]
	if one.Name != "uibig1/one" || len(one.Entries) != ui.MaxEntries || one.More != 10000-ui.MaxEntries {
		t.Fatalf("the big instance: %q with %d nodes, %d more", one.Name, len(one.Entries), one.More)
	}
	bctx := browser(t)
	navigate(t, bctx, url)
	waitDOM(t, bctx, `String(document.querySelectorAll(".instance").length) + (document.getElementById("next") ? " next" : "")`,
		strconv.Itoa(ui.PerPage)+" next", 10*time.Second)
}

// TestServeUI: baton serve --ui serves the page next to its etcd.
func TestServeUI(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	srv := start(t, env(), "serve", "--data-dir", filepath.Join(t.TempDir(), "d"), "--listen", "127.0.0.1:0", "--ui", "--ui-listen", "127.0.0.1:0")
	srv.waitOutput("baton: ui on http://", 30*time.Second)
	srv.waitOutput("Ctrl-C stops", 30*time.Second)
	out := srv.stdout.String()
	i := strings.Index(out, "etcd serving on ")
	addr := strings.Fields(out[i+len("etcd serving on "):])[0]
	i = strings.Index(out, "ui on http://")
	url := strings.Fields(out[i+len("ui on "):])[0]
	e := env("BATON_STORE=etcd://" + addr)
	holder := startHeld(t, e, "lock", "/served/job")
	navigate(t, ctx, url)
	waitDOM(t, ctx, rolesJS("/served/job"), fmt.Sprintf("holder:%d", pid(holder)), 10*time.Second)
	holder.signal(2)
	srv.signal(2)
	if code := srv.wait(15 * time.Second); code != 0 {
		t.Fatalf("serve exit %d; stderr %q", code, srv.stderr.String())
	}
}

// TestUIAdminRemoveWaiter: with --admin, removing a waiter from the page
// deletes that waiter's node (that token) and leaves the holder alone.
func TestUIAdminRemoveWaiter(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e, _ := etcdEnv(t)
	name := "/uirw/job"
	holder := startHeld(t, e, "lock", name)
	start(t, e, "lock", name)
	waitStatus(t, e, name, 2)
	const tok = "another-test-token"
	url, audit := startAdminUI(t, e, tok, "--prefix", "/uirw")
	navigate(t, ctx, url)
	waitDOM(t, ctx, `String(document.querySelectorAll("tr.waiter button.remove-waiter").length)`, "1", 10*time.Second)
	old := domText(t, ctx, `document.querySelector("tr.waiter .token").textContent`)
	confirmAdmin(t, ctx, tok, "tr.waiter", "button.remove-waiter")
	log := proctest.WaitFile(t, audit, `"action":"remove-waiter"`, 5*time.Second)
	if !strings.Contains(log, `"token":`+old+`,`) || !strings.Contains(log, `"result":"deleted"`) {
		t.Fatalf("audit log %q, want token %s deleted", log, old)
	}
	waitDOM(t, ctx, fmt.Sprintf(`String([...document.querySelectorAll("tr.entry .token")].some(e => e.textContent === %q))`, old), "false", 5*time.Second)
	waitDOM(t, ctx, `String(document.querySelector("tr.holder .identity").textContent.includes("pid `+strconv.Itoa(pid(holder))+` "))`, "true", 5*time.Second)
	holder.signal(2)
}
