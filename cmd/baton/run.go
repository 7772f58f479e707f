package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/batonhq/baton/cmd/baton/internal/exit"
)

// Exit statuses besides CMD's own.
const (
	exitFailure = exit.Failure
	exitUsage   = exit.Usage
	exitTimeout = exit.Timeout
	exitLost    = exit.Lost
)

// Main is the baton program: Run parses the arguments and runs one
// subcommand. Tests call it directly; main() wires it to the process.
type Main struct {
	Stdin  *os.File
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (BATON_STORE).
	Getenv func(string) string
	// LookupEnv also says whether a variable is set (an empty
	// BATON_STORE is refused); nil: set when Getenv says it is not empty.
	LookupEnv func(string) (string, bool)

	passSecrets bool // --pass-secrets: CMD gets baton's secrets (cmdEnviron)

	exits []func() // run when Run returns, last first
}

// atExit makes f run when Run returns (a metrics server's stop).
func (m *Main) atExit(f func()) { m.exits = append(m.exits, f) }

func (m *Main) runExits() {
	for len(m.exits) > 0 {
		f := m.exits[len(m.exits)-1]
		m.exits = m.exits[:len(m.exits)-1]
		f()
	}
}

// NewMain returns a Main on the process's standard files and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv}
}

// lookupEnv is LookupEnv, or Getenv when it is nil.
func (m *Main) lookupEnv(k string) (string, bool) {
	if m.LookupEnv != nil {
		return m.LookupEnv(k)
	}
	v := m.Getenv(k)
	return v, v != ""
}

// exitError carries an exit status; an empty message prints nothing.
type exitError = exit.Error

// exitWith returns an error that makes baton exit with code, printing err
// (if not nil) as the one line on stderr.
func exitWith(code int, err error) error { return exit.With(code, err) }

func usageErr(format string, a ...any) error { return exit.Usagef(format, a...) }

// libPrefix is the "baton: " that starts the library's error texts, where
// one starts inside a message: at its start, after ": ", "; " or "(".
// Elsewhere "baton: " is part of what the message quotes (a lock named
// jobs/baton, a CMD named my-baton) and stays.
var libPrefix = regexp.MustCompile(`(^|: |; |\()baton: `)

// errLine is err's message for a line that starts "baton: ": on one
// line, without the "baton: " the library's errors carry too.
func errLine(err error) string {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	for {
		out := libPrefix.ReplaceAllString(msg, "$1")
		if out == msg {
			return out
		}
		msg = out
	}
}

// namedUsage makes a usage error of command name read "name: …" (as in
// "baton: lock: --ttl 0s: …"), unless it names the command already
// ("lock: …", "queue put: …", "lock --shared …"): every usage error is
// one line "baton: COMMAND: …", whichever check found it (the command's
// own, or the store flags' and names' checks all commands share).
func namedUsage(name string, err error) error {
	ee, ok := err.(*exitError)
	if !ok || ee.Code != exitUsage || ee.Err == nil {
		return err
	}
	msg := errLine(ee.Err)
	if strings.HasPrefix(msg, name+":") || strings.HasPrefix(msg, name+" ") {
		return err
	}
	return exitWith(exitUsage, fmt.Errorf("%s: %w", name, ee.Err))
}

// Exit prints err (one line, never a stack trace) and returns the exit
// status for it.
func (m *Main) Exit(err error) int {
	if err == nil {
		return 0
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if msg := errLine(err); msg != "" {
		fmt.Fprintf(m.Stderr, "baton: %s\n", msg)
	}
	return code
}

type command struct {
	name   string
	run    func(m *Main, ctx context.Context, args []string) error
	usage  string
	hidden bool
}

var commands []command

func init() {
	commands = []command{
		{name: "serve", run: (*Main).serve, usage: "serve [--data-dir DIR] [--listen 127.0.0.1:2379]     run an embedded etcd\n" +
			"        [--tls-cert F --tls-key F [--tls-client-ca F]] [--auth]  TLS (etcds://); auth as root, password $BATON_AUTH_PASSWORD\n" +
			"        [--name N --initial-cluster N=h:p,… | --cluster FILE | --join URL]  a member of a cluster; serve members lists them"},
		{name: "lock", run: (*Main).lock, usage: "lock [flags] [--try] [--shared] NAME [-- CMD [ARG…]] run CMD holding lock NAME (--shared: read lock)"},
		{name: "elect", run: (*Main).elect, usage: "elect [flags] NAME [--value V] [-- CMD [ARG…]]       run CMD only while leader; --requeue: every turn; --observe to watch"},
		{name: "revoke", run: (*Main).revoke, usage: "revoke [flags] NAME                                  ask the holder of lock NAME to let go (--on-revoke)"},
		{name: "status", run: (*Main).status, usage: "status [flags] [--json] NAME                         holders and waiters of NAME"},
		{name: "queue", run: (*Main).queue, usage: "queue put [--priority N | --delay D] NAME [VALUE…] | take [--priority | --delay] [--timeout D] [--raw | -0] NAME | len NAME"},
		{name: "counter", run: (*Main).counter, usage: "counter get|set|add [--int32] [--lock L] NAME [V]  a shared counter (Curator's atomic long / SharedCount)"},
		{name: "barrier", run: (*Main).barrier, usage: "barrier set|wait|remove NAME | barrier double -n N NAME [-- CMD]"},
		{name: "permit", run: (*Main).permit, usage: "permit list [-n N] [--json] NAME | permit extend NAME ID D | permit release NAME ID  expiring permits (semaphore --permit-ttl)"},
		{name: "members", run: (*Main).members, usage: "members [flags] [--json] NAME | members NAME --join ID [--data D] -- CMD  list a group; be a member while CMD runs"},
		{name: "semaphore", run: (*Main).semaphore, usage: "semaphore -n N [flags] [--permit-ttl D] NAME [-- CMD [ARG…]]  run CMD as one of N holders"},
		{name: "ui", run: (*Main).ui, usage: "ui [--store URL] [--prefix P] [--listen 127.0.0.1:8080] [--admin]  a live web page of every recipe instance"},
		{name: "bench", run: (*Main).bench, usage: "bench [--store URL] [--workload W] [--clients N] [--duration D] [--json]  measure locks on the store"},
		{name: "postgres", run: (*Main).postgres, usage: "postgres init [--store postgres://…[?schema=S]]       make or migrate baton's schema (for clients without DDL)"},
		{name: "completion", run: (*Main).completion, usage: "completion bash|zsh|fish                             shell completion: source <(baton completion bash)"},
		{name: "version", run: func(m *Main, _ context.Context, _ []string) error {
			fmt.Fprintf(m.Stdout, "baton %s\n", version())
			return nil
		}, usage: "version                                              print baton's version (also --version)"},
		{name: "demo", run: (*Main).demo, usage: "demo [--store URL]                                   the whole system on an embedded etcd"},
		{name: "worker", run: (*Main).worker, hidden: true},
		{name: "watchdog", run: (*Main).watchdog, hidden: true},
	}
}

// usage prints the overview to w: stdout when asked for, stderr after a
// usage error.
func (m *Main) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: baton COMMAND [ARG…]\n\ncommands:\n")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %s\n", c.usage)
		}
	}
	fmt.Fprintf(w, "\nThe store is --store URL or $BATON_STORE: zk://[user:pass@]h:p[,h:p…][/chroot],\n"+
		"etcd://[user:pass@]h:p[,…], redis://[user:pass@]h:p[/db], redlock://h:p,h:p,…,\n"+
		"redis-sentinel://[user:pass@]h:p,h:p,…/MASTER (rediss-sentinel:// over TLS; --replicas N: N replicas ack each grant),\n"+
		"redis-cluster://[user:pass@]h:p,h:p,… (a Redis Cluster: any of its nodes; rediss-cluster:// over TLS),\n"+
		"postgres://[user:pass@]h:p[,…][/db][?sslmode=…&schema=S] (or postgresql://; h a unix socket's directory\n"+
		"as %%2Fvar%%2Frun%%2Fpostgresql, or none for libpq's default)  (default %s);\n"+
		"zks://, etcds:// and rediss:// are the same over TLS, with --tls-ca, --tls-cert, --tls-key\n"+
		"(or $BATON_TLS_CA, $BATON_TLS_CERT, $BATON_TLS_KEY). Passwords are never printed.\n"+
		nameRule+
		"Exit status: CMD's own; 75 not acquired within --timeout or --try (CMD not run); 76 lost, or in\n"+
		"jeopardy, while CMD ran (CMD's group got SIGTERM --grace before the loss deadline when no contact\n"+
		"with the store was confirmed until then, or when the loss was learnt; SIGKILL --kill-after later,\n"+
		"and at the loss deadline at the latest, even if baton was killed or stopped); 2 usage; 1 store\n"+
		"unreachable or other failure; 126/127 CMD cannot be run/not found; 128+n signal n while waiting,\n"+
		"CMD not run.\n"+
		"Run 'baton COMMAND -h' (or 'baton help COMMAND') for a command's flags.\n", defaultStore)
}

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		m.usage(m.Stderr)
		return exitWith(exitUsage, nil)
	}
	switch args[0] {
	case "help":
		if len(args) > 1 && args[1] != "-h" && args[1] != "--help" {
			// baton help VERB… is baton VERB… -h.
			return m.Run(ctx, append(append([]string{}, args[1:]...), "-h"))
		}
		m.usage(m.Stdout)
		return nil
	case "-h", "--help", "-help":
		m.usage(m.Stdout)
		return nil
	case "--version", "-version", "version":
		fmt.Fprintf(m.Stdout, "baton %s\n", version())
		return nil
	}
	defer m.runExits()
	for _, c := range commands {
		if c.name == args[0] {
			return namedUsage(c.name, c.run(m, ctx, args[1:]))
		}
	}
	return usageErr("unknown command %q (see baton help)", args[0])
}
