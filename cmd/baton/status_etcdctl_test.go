package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/testenv"
)

// etcdctlElect starts `etcdctl elect NAME VALUE` (a candidate of etcd's
// v3election service) against addr; the test's cleanup stops it.
func etcdctlElect(t *testing.T, addr, name, value string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("etcdctl")
	testenv.Require(t, "etcdctl (install etcd-client)", err)
	cmd := exec.Command(path, "--endpoints="+addr, "--dial-timeout=10s", "elect", name, value)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// roles lists a report's entries as role=value.
func rolesOf(r statusReport) string {
	var s []string
	for _, e := range r.Entries {
		s = append(s, e.Role+"="+e.Value)
	}
	return strings.Join(s, " ")
}

// `etcdctl elect` candidates (etcd's v3election service) follow election
// rules in status: one leader, the others candidates (not lock holders),
// on a name only etcdctl uses and on a baton election's name, mixed with
// baton's candidates; with the name bare, with its "/" and nested.
func TestStatusEtcdctlElect(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	addr := sharedEtcd(t)
	for _, name := range spellings("st-ctl-elect") {
		t.Run("EtcdctlOnly/"+strings.ReplaceAll(name, "/", "_"), func(t *testing.T) { statusEtcdctlOnly(t, e, addr, name) })
	}
	for _, name := range spellings("st-ctl-mixed") {
		t.Run("MixedWithBaton/"+strings.ReplaceAll(name, "/", "_"), func(t *testing.T) { statusEtcdctlMixed(t, e, addr, name) })
	}
}

func statusEtcdctlOnly(t *testing.T, e []string, addr, name string) {
	etcdctlElect(t, addr, name, "p1")
	pollStatus(t, e, name, func(r statusReport) bool { return len(r.Entries) == 1 })
	etcdctlElect(t, addr, name, "p2")
	rep := pollStatus(t, e, name, func(r statusReport) bool { return len(r.Entries) == 2 })
	if rolesOf(rep) != "leader=p1 candidate=p2" || rep.Holders != 1 || rep.Waiters != 1 ||
		len(rep.Recipes) != 1 || rep.Recipes[0] != layout.RecipeElection {
		t.Fatalf("etcdctl's election in status: %s %+v", rolesOf(rep), rep)
	}
	for _, x := range rep.Entries {
		if x.Peer != layout.PeerEtcd || x.Identity != "foreign" || x.TTL <= 0 {
			t.Fatalf("etcdctl's candidate %+v", x)
		}
	}
	if _, _, code := run(t, e, "status", "--held", name); code != 0 {
		t.Fatalf("--held with etcdctl leading: exit %d", code)
	}
}

func statusEtcdctlMixed(t *testing.T, e []string, addr, name string) {
	leader := start(t, e, "elect", name, "--value", "b1")
	leader.waitOutput("BATON_", 10*time.Second)
	ctl := etcdctlElect(t, addr, name, "p2")
	pollStatus(t, e, name, func(r statusReport) bool { return len(r.Entries) == 2 })
	later := start(t, e, "elect", name, "--value", "b3", "--", "true")
	rep := pollStatus(t, e, name, func(r statusReport) bool { return len(r.Entries) == 3 })
	if rolesOf(rep) != "leader=b1 candidate=p2 candidate=b3" || rep.Holders != 1 || rep.Waiters != 2 {
		t.Fatalf("mixed election in status: %s %+v", rolesOf(rep), rep)
	}
	if rep.Entries[1].Peer != layout.PeerEtcd || rep.Entries[0].Peer == layout.PeerEtcd || rep.Entries[2].Peer == layout.PeerEtcd {
		t.Fatalf("peers %+v", rep.Entries)
	}
	// baton's leader resigns: etcdctl leads, baton's candidate waits.
	leader.signal(syscall.SIGINT)
	if code := leader.wait(15 * time.Second); code != 0 {
		t.Fatalf("baton leader exit %d", code)
	}
	rep = pollStatus(t, e, name, func(r statusReport) bool { return len(r.Entries) == 2 })
	if rolesOf(rep) != "leader=p2 candidate=b3" || rep.Holders != 1 || rep.Waiters != 1 {
		t.Fatalf("after baton's leader left: %s %+v", rolesOf(rep), rep)
	}
	// etcdctl resigns on SIGINT: baton's candidate leads, runs CMD.
	if err := ctl.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := later.wait(15 * time.Second); code != 0 {
		t.Fatalf("baton candidate exit %d: %q", code, later.stderr.String())
	}
}
