package main

import (
	"strings"
	"testing"
)

// TestEtcdCredentialsIgnored: a user and password given to an etcd
// server whose authentication is off are not checked by the server;
// `baton lock` still runs CMD, and says so on stderr, once.
func TestEtcdCredentialsIgnored(t *testing.T) {
	t.Parallel()
	addr := sharedEtcd(t)
	stdout, stderr, code := run(t, env(), "lock", "--store", "etcd://someone:Not-Checked-pw@"+addr, "/creds-ignored", "--", "echo", "held")
	if code != 0 || stdout != "held\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	want := "baton: warning: etcd://someone:xxxxx@" + addr + " has authentication off: the user and password were not checked, and any client may take these locks\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if strings.Contains(stderr, "Not-Checked-pw") {
		t.Errorf("password shown: %q", stderr)
	}
	// Without credentials there is nothing to warn about.
	if _, stderr, code := run(t, env(), "lock", "--store", "etcd://"+addr, "/creds-ignored", "--", "true"); code != 0 || stderr != "" {
		t.Errorf("without credentials: exit %d, stderr %q", code, stderr)
	}
}
