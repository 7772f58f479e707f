package main

import (
	"runtime/debug"
	"strings"
)

// version is the module version baton was built from, with the VCS
// revision when the build recorded one ("(devel) rev abc1234, modified").
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
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
	if len(rev) > 0 {
		v += " " + strings.Join(rev, ", ")
	}
	return v + " " + bi.GoVersion
}
