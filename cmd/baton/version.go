package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// version names what baton was built from: the module version (a release
// tag, or Go's pseudo-version of the commit), the VCS revision when the
// build recorded one ("rev 9bb1ff9c1234, modified"), and the Go version.
//
// `go run` records no revision, and neither does a build with
// -buildvcs=false (some Go installations set it in GOROOT/go.env) or
// from a git worktree. A binary built from a clone without one reads the
// revision of that clone, which it finds from the path its own source was
// compiled from, and says so ("rev 9bb1ff9c1234 (read from the clone
// /src/baton)"):
// exact for `go run`, and the clone's revision now, not at build time, for
// an older binary.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	_, file, _, _ := runtime.Caller(0)
	return formatVersion(bi, func() (string, bool, string) { return cloneRevision(filepath.Dir(file)) })
}

// formatVersion is version for build info bi; clone returns the revision
// of the clone the source came from, whether its tree has changes, and its
// directory ("" if there is none).
func formatVersion(bi *debug.BuildInfo, clone func() (rev string, modified bool, dir string)) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev []string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = append(rev, "rev "+s.Value[:12])
		case s.Key == "vcs.modified" && s.Value == "true":
			rev = append(rev, "modified")
		}
	}
	if len(rev) == 0 && v == "(devel)" && clone != nil {
		if r, modified, dir := clone(); r != "" {
			rev = append(rev, "rev "+r)
			if modified {
				rev = append(rev, "modified")
			}
			rev[len(rev)-1] += " (read from the clone " + dir + ")"
		}
	}
	if len(rev) > 0 {
		v += " " + strings.Join(rev, ", ")
	}
	return v + " " + bi.GoVersion
}

// cloneRevision returns the revision of the git clone holding dir (the
// first 12 hex digits), whether its tree has uncommitted changes, and the
// clone's top directory; rev is "" if dir is not in a clone (a module
// cache, a -trimpath build) or git cannot tell within a second.
func cloneRevision(dir string) (rev string, modified bool, top string) {
	if !filepath.IsAbs(dir) {
		return "", false, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	top, ok := git("rev-parse", "--show-toplevel")
	if !ok {
		return "", false, ""
	}
	head, ok := git("rev-parse", "HEAD")
	if !ok || len(head) < 12 {
		return "", false, ""
	}
	status, ok := git("status", "--porcelain", "--untracked-files=no")
	return head[:12], ok && status != "", top
}
