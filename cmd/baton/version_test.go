package main

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

func TestFormatVersion(t *testing.T) {
	noClone := func() (string, bool, string) { return "", false, "" }
	clone := func() (string, bool, string) { return "0123456789ab", true, "/src/baton" }
	stamped := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "9bb1ff9c1234567890abcdef9bb1ff9c12345678"},
		{Key: "vcs.modified", Value: "false"},
	}
	for _, c := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		clone    func() (string, bool, string)
		want     string
	}{
		{"release", "v1.2.3", nil, clone, "v1.2.3 go1.26.8"},
		{"stamped", "v0.0.0-20261127171500-9bb1ff9c1234", stamped, clone, "v0.0.0-20261127171500-9bb1ff9c1234 rev 9bb1ff9c1234 go1.26.8"},
		{"stamped in devel", "(devel)", stamped, clone, "(devel) rev 9bb1ff9c1234 go1.26.8"},
		{"go run from a clone", "(devel)", nil, clone, "(devel) rev 0123456789ab, modified (read from the clone /src/baton) go1.26.8"},
		{"no clone", "", nil, noClone, "(devel) go1.26.8"},
	} {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: c.settings}
		bi.Main.Version = c.version
		if got := formatVersion(bi, c.clone); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionNamesTheClone: built from a clone without a recorded
// revision (go run, -buildvcs=false), baton version names the clone's
// HEAD.
func TestVersionNamesTheClone(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	testenv.Require(t, "a git clone of baton", err)
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	rev, _, gotTop := cloneRevision(dir)
	if want := strings.TrimSpace(string(head))[:12]; rev != want {
		t.Errorf("revision %q, want HEAD's %q", rev, want)
	}
	if want := strings.TrimSpace(string(top)); gotTop != want {
		t.Errorf("clone %q, want %q", gotTop, want)
	}
	if rev, _, _ := cloneRevision("github.com/batonhq/baton/cmd/baton"); rev != "" {
		t.Errorf("a -trimpath source path gave revision %q", rev)
	}
}
