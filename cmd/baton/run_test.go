package main

import (
	"bytes"
	"context"
	"flag"
	"reflect"
	"slices"
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

// TestUsageErrorsOnePrefix: a usage error is one line with one "baton:"
// prefix and the command's name ("baton: lock: …", not "baton: baton
// lock: …" nor "baton: --ttl …", as the README says), and only a command that runs a CMD hints "put CMD after --".
func TestUsageErrorsOnePrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		hint bool // "put CMD after --"
	}{
		{[]string{"lock", "--bogus", "x"}, "baton: lock: flag provided but not defined: -bogus (see baton lock -h; put CMD after --)\n", true},
		{[]string{"lock", "x", "echo", "hi"}, `baton: lock: unexpected arguments "echo hi" (put CMD after --)` + "\n", true},
		{[]string{"status", "--bogus", "x"}, "baton: status: flag provided but not defined: -bogus (see baton status -h)\n", false},
		{[]string{"status", "a", "b"}, `baton: status: unexpected arguments "b" (one NAME; see baton status -h)` + "\n", false},
		{[]string{"revoke", "--bogus", "x"}, "baton: revoke: flag provided but not defined: -bogus (see baton revoke -h)\n", false},
		{[]string{"queue", "put", "--bogus", "q", "v"}, "baton: queue put: flag provided but not defined: -bogus (see baton queue put -h)\n", false},
		{[]string{"barrier", "double", "-n", "2", "--bogus", "d"}, "baton: barrier double: flag provided but not defined: -bogus (see baton barrier double -h; put CMD after --)\n", true},
		{[]string{"queue", "take", "--timeout", "-1s", "q"}, "baton: queue take: --timeout -1s: must not be negative\n", false},
		// The checks every command shares name the command too.
		{[]string{"lock", "--ttl", "0", "x"}, "baton: lock: --ttl 0s: must be between 1s and 24h0m0s\n", false},
		{[]string{"status", "--dial-timeout", "0", "x"}, "baton: status: --dial-timeout 0s: must be positive\n", false},
		{[]string{"queue", "put", "--store", "", "q", "v"}, "baton: queue put: --store is empty (want a store URL, or leave --store out for $BATON_STORE or etcd://127.0.0.1:2379)\n", false},
		{[]string{"elect", "--store", "foo://x", "e"}, `baton: elect: bad store URL "foo://x": unknown scheme "foo" (want zk, zks, etcd, etcds, redis, rediss, redis-sentinel, rediss-sentinel, redlock, redis-cluster, rediss-cluster or postgres)` + "\n", false},
		{[]string{"semaphore", "-n", "1", "a//b"}, `baton: semaphore: invalid name "a//b": an empty element (a doubled or trailing /)` + "\n", false},
		// A lock named twice in one set (as written, or in two forms
		// on ZooKeeper, where both are the znode /a).
		{[]string{"lock", "a", "b", "a", "--", "true"}, `baton: lock: "a" is given twice: give each NAME once` + "\n", true},
		{[]string{"lock", "--store", "zk://127.0.0.1:1", "a", "/a", "--"}, `baton: lock: "a" and "/a" name one lock, /a: give each NAME once` + "\n", true},
		{[]string{"serve", "members", "--store", "foo://x"}, `baton: serve members: bad store URL "foo://x": unknown scheme "foo" (want zk, zks, etcd, etcds, redis, rediss, redis-sentinel, rediss-sentinel, redlock, redis-cluster, rediss-cluster or postgres)` + "\n", false},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := m.Exit(m.Run(context.Background(), tc.args))
		if code != exitUsage || errb.String() != tc.want {
			t.Errorf("baton %q: exit %d stderr %q, want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestHelpOnStdout: `baton help VERB…` is `baton VERB… -h`, and `completion
// -h` is help too: on stdout, exit 0.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "lock"}, "usage: baton lock [--store URL]"},
		{[]string{"help", "queue", "put"}, "usage: baton queue put "},
		{[]string{"help", "queue"}, "usage: baton queue put|take|len"},
		{[]string{"help", "completion"}, "usage: baton completion bash|zsh|fish"},
		{[]string{"completion", "--help"}, "usage: baton completion bash|zsh|fish"},
		{[]string{"help"}, "usage: baton COMMAND"},
		{[]string{"help", "-h"}, "usage: baton COMMAND"},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := m.Exit(m.Run(context.Background(), tc.args))
		if code != 0 || !strings.HasPrefix(out.String(), tc.want) || errb.Len() != 0 {
			t.Errorf("baton %q: exit %d stdout %.60q stderr %q, want 0 and %q", tc.args, code, out.String(), errb.String(), tc.want)
		}
	}
}

// TestCompletionOffersEveryFlag: each shell's script offers, after each
// command, every flag that command's -h (and its verbs') lists.
func TestCompletionOffersEveryFlag(t *testing.T) {
	t.Parallel()
	script := func(shell string) string {
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
		if code := m.Exit(m.Run(context.Background(), []string{"completion", shell})); code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, out.String())
		}
		return out.String()
	}
	bash, fish := script("bash"), script("fish")
	m := &Main{Getenv: func(string) string { return "" }}
	for _, c := range commands {
		if c.hidden || c.name == "completion" || c.name == "version" {
			continue
		}
		flags := m.completionFlags(c.name)
		if !slices.Contains(flags, "--store") && c.name != "serve" {
			t.Errorf("%s: flags %q lack --store", c.name, flags)
		}
		var offered []string // the words of flags="…" on the command's case line
		for _, l := range strings.Split(bash, "\n") {
			if _, rest, ok := strings.Cut(strings.TrimSpace(l), c.name+") "); ok {
				_, list, _ := strings.Cut(rest, `flags="`)
				list, _, _ = strings.Cut(list, `"`)
				offered = strings.Fields(list)
			}
		}
		for _, f := range flags {
			if !slices.Contains(offered, f) {
				t.Errorf("bash: %s does not offer %s: %q", c.name, f, offered)
			}
			opt := "-l " + strings.TrimPrefix(f, "--")
			if !strings.HasPrefix(f, "--") {
				opt = "-s " + f[1:]
			}
			if !strings.Contains(fish, "__fish_seen_subcommand_from "+c.name+"' "+opt+"\n") {
				t.Errorf("fish: %s does not offer %s", c.name, f)
			}
		}
	}
	for c, want := range map[string][]string{
		"lock":   {"--try", "--metrics-addr", "--on-revoke", "-v"},
		"status": {"--held", "--watch", "--json"},
		"ui":     {"--admin", "--prefix"},
		"queue":  {"--priority", "--raw", "-0"},
		"serve":  {"--initial-cluster", "--ui"},
	} {
		for _, f := range want {
			if !slices.Contains(m.completionFlags(c), f) {
				t.Errorf("%s: completion lacks %s", c, f)
			}
		}
	}
}

// TestServeMembersFlagsFirst: serve members takes its flags before the
// verb too (baton serve --store URL members), as queue and barrier do
// (before, serve refused --store), and a store it cannot reach is named
// with the last connection error, not only "context deadline exceeded".
func TestServeMembersFlagsFirst(t *testing.T) {
	t.Parallel()
	dead := "etcd://" + closedPort(t)
	for _, args := range [][]string{
		{"serve", "--store", dead, "--dial-timeout", "300ms", "members"},
		{"serve", "--store", dead, "members", "--dial-timeout", "300ms"},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := m.Exit(m.Run(context.Background(), args))
		if code != exitFailure || !strings.HasPrefix(errb.String(), "baton: serve members: "+dead) || !strings.Contains(errb.String(), "connection refused") {
			t.Errorf("baton %q: exit %d stderr %q, want serve members' answer", args, code, errb.String())
		}
	}
}
