package main

import (
	"strings"
	"testing"
	"time"
)

// TestCmdEnvWithoutSecrets: with the store's password in $BATON_STORE,
// as the README advises, CMD gets $BATON_STORE without the password, and
// neither $BATON_AUTH_PASSWORD nor $BATON_UI_TOKEN, whichever command runs
// it; a baton inside CMD says why it has no password; --pass-secrets hands
// them on as they are.
func TestCmdEnvWithoutSecrets(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		var url string
		for _, kv := range e {
			if v, ok := strings.CutPrefix(kv, "BATON_STORE="); ok {
				url = v
			}
		}
		host := strings.TrimPrefix(url, st.scheme+"://")
		const pw, rootPW, token = "Store-pw-7f3", "Root-pw-91c", "Ui-token-5d2"
		secret := env("BATON_STORE="+st.scheme+"://billing:"+pw+"@"+host, "BATON_AUTH_PASSWORD="+rootPW, "BATON_UI_TOKEN="+token)
		name := "/cmd-env-" + st.name
		withoutSecrets := func(what, out string) {
			t.Helper()
			for _, s := range []string{pw, rootPW, token} {
				if strings.Contains(out, s) {
					t.Errorf("%s: CMD got the secret %q: %q", what, s, out)
				}
			}
			if !strings.Contains(out, "BATON_STORE="+st.scheme+"://billing@"+host+"\n") {
				t.Errorf("%s: CMD's $BATON_STORE is not the store without its password: %q", what, out)
			}
		}
		for _, args := range [][]string{
			{"lock", name, "--", "env"},
			{"elect", name, "--", "env"},
			{"semaphore", "-n", "1", name + "-sem", "--", "env"},
			{"members", name + "-group", "--join", "a", "--", "env"},
			{"barrier", "double", "-n", "1", name + "-double", "--", "env"},
		} {
			out, stderr, code := run(t, secret, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d %q", args[0], code, stderr)
			}
			withoutSecrets(args[0], out)
		}
		// A baton inside CMD cannot use the store and says why.
		p := start(t, secret, "lock", name, "--", "sh", "-c", `"$0" status "$1" 2>&1`, batonBin, name)
		if code := p.wait(30 * time.Second); code != exitUsage || !strings.Contains(p.stdout.String(), "--pass-secrets") {
			t.Errorf("baton status inside CMD: exit %d, output %q; want %d and a word on --pass-secrets", code, p.stdout.String(), exitUsage)
		}
		// --pass-secrets: as they are, and a baton inside CMD works.
		out, stderr, code := run(t, secret, "lock", "--pass-secrets", name, "--", "env")
		if code != 0 || !strings.Contains(out, "BATON_STORE="+st.scheme+"://billing:"+pw+"@"+host+"\n") ||
			!strings.Contains(out, "BATON_AUTH_PASSWORD="+rootPW+"\n") || !strings.Contains(out, "BATON_UI_TOKEN="+token+"\n") {
			t.Errorf("--pass-secrets: exit %d, stderr %q, CMD's environment %q", code, stderr, out)
		}
		if _, stderr, code := run(t, secret, "lock", "--pass-secrets", name, "--", batonBin, "status", name); code != 0 {
			t.Errorf("baton status inside CMD with --pass-secrets: exit %d %q", code, stderr)
		}
	})
}
