package main

import (
	"bytes"
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestRunInProcess drives Main.Run directly for the paths that need no
// store: help, usage errors and their exit statuses.
func TestRunInProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"help"}, 0, ""},
		{[]string{"lock", "-h"}, 0, ""},
		{nil, exitUsage, "usage: baton COMMAND"},
		{[]string{"nope"}, exitUsage, `baton: unknown command "nope"`},
		{[]string{"lock", "--timeout", "soon", "x"}, exitUsage, "invalid value"},
		{[]string{"queue", "pop", "q"}, exitUsage, `unknown verb "pop"`},
		{[]string{"semaphore", "-n", "0", "s"}, exitUsage, "-n N"},
		{[]string{"barrier", "double", "d"}, exitUsage, "-n N"},
		{[]string{"elect", "--observe", "e", "--", "true"}, exitUsage, "--observe takes no CMD"},
		{[]string{"serve", "extra"}, exitUsage, "unexpected arguments"},
		{[]string{"status", "--store", "redis://h", "--dial-timeout", "x", "k"}, exitUsage, "invalid value"},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := m.Exit(m.Run(context.Background(), tc.args))
		if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("baton %q: exit %d stderr %q, want %d and %q", tc.args, code, errb.String(), tc.code, tc.stderr)
		}
	}
}

func TestParseArgsInterspersed(t *testing.T) {
	t.Parallel()
	fs := &flagSet{FlagSet: flag.NewFlagSet("t", flag.ContinueOnError)}
	v := fs.String("value", "", "")
	n := fs.Int("n", 0, "")
	pos, cmd, err := parseArgs(fs, []string{"-n", "2", "NAME", "--value", "V", "--", "sh", "-c", "--value x"})
	if err != nil || *v != "V" || *n != 2 || !reflect.DeepEqual(pos, []string{"NAME"}) ||
		!reflect.DeepEqual(cmd, []string{"sh", "-c", "--value x"}) {
		t.Fatalf("pos %q cmd %q value %q n %d err %v", pos, cmd, *v, *n, err)
	}
	if _, cmd, _ := parseArgs(fs, []string{"NAME"}); cmd != nil {
		t.Fatalf("no -- gave cmd %q", cmd)
	}
	if _, cmd, _ := parseArgs(fs, []string{"NAME", "--"}); cmd == nil || len(cmd) != 0 {
		t.Fatalf("empty -- gave cmd %#v", cmd)
	}
}
