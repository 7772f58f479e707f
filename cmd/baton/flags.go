package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/internal/supervise"
)

const defaultStore = store.Default

// cleanupTimeout bounds releasing and closing after the work is done.
const cleanupTimeout = 5 * time.Second

// storeFlags are the flags every store-using subcommand takes.
type storeFlags struct {
	url      string
	dial     time.Duration
	ttl      time.Duration
	withTTL  bool // the command has --ttl
	replicas int  // --replicas, on the commands that take Redis locks (addReplicasFlag)
	tls      store.TLSFiles
	name     string // the recipe name, checked against the store kind before dialing
	verb     string // the command ("lock", …), written into our nodes' identity
	recipe   string // what the command makes besides plain locks (store.Options.Recipe)

	metrics string         // --metrics-addr, where the command serves /metrics
	ms      *metricsServer // serving it, from the first open

	envEmpty bool          // $BATON_STORE is set and empty
	fs       *flag.FlagSet // the flags, to tell an empty --store from an empty $BATON_STORE
}

// TTL bounds, the same on every store. A server may still grant another
// TTL (ZooKeeper keeps a session between 2 and 20 ticks); baton then says
// so on stderr and keeps its loss deadline by the TTL granted.
const (
	minTTL = time.Second
	maxTTL = 24 * time.Hour
)

// checkDurations makes every bad duration a usage error.
func (sf *storeFlags) checkDurations() error {
	if sf.dial <= 0 {
		return sf.usageErr("--dial-timeout %v: must be positive", sf.dial)
	}
	if sf.withTTL && (sf.ttl < minTTL || sf.ttl > maxTTL) {
		return sf.usageErr("--ttl %v: must be between %v and %v", sf.ttl, minTTL, maxTTL)
	}
	if sf.replicas < 0 {
		return sf.usageErr("--replicas %d: must not be negative", sf.replicas)
	}
	return nil
}

// usageErr is a usage error found in the store flags, naming the command
// and its verb ("queue put: --store is empty …").
func (sf *storeFlags) usageErr(format string, a ...any) error {
	if sf.verb == "" {
		return usageErr(format, a...)
	}
	return usageErr("%s: %s", sf.verb, fmt.Sprintf(format, a...))
}

// options are the store.Options the flags ask for.
func (sf *storeFlags) options() store.Options {
	return store.Options{DialTimeout: sf.dial, TTL: sf.ttl, TLS: sf.tls, Telemetry: sf.ms.telemetry(), Recipe: sf.recipe, Replicas: sf.replicas}
}

// parse parses the store URL and checks the TLS flags against it, before
// any dialing: every problem is a usage error. (The recipe name was
// cleaned already, the same way for every store: cleanName.)
func (sf *storeFlags) parse() (store.URL, error) {
	if err := sf.checkDurations(); err != nil {
		return store.URL{}, err
	}
	if sf.url == "" {
		if sf.envEmpty && !sf.storeGiven() {
			return store.URL{}, sf.usageErr("$BATON_STORE is set and empty (set it to a store URL, or unset it for %s)", defaultStore)
		}
		return store.URL{}, sf.usageErr("--store is empty (want a store URL, or leave --store out for $BATON_STORE or %s)", defaultStore)
	}
	u, err := store.Parse(sf.url)
	if errors.Is(err, store.ErrHalfCredentials) {
		return u, sf.usageErr("%v (a CMD run by baton gets $BATON_STORE without its password unless baton runs with --pass-secrets)", err)
	}
	if err != nil {
		return u, sf.usageErr("%v", err)
	}
	if err := u.CheckTLS(sf.tls); err != nil {
		return u, sf.usageErr("%v", err)
	}
	if sf.replicas > 0 && !u.OneRedisMaster() {
		return u, sf.usageErr("--replicas needs one Redis master, redis:// or redis-sentinel:// (or rediss://, rediss-sentinel://), not %s://", u.Scheme)
	}
	return u, nil
}

// storeGiven reports whether --store was on the command line.
func (sf *storeFlags) storeGiven() bool {
	given := false
	if sf.fs != nil {
		sf.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "store" })
	}
	return given
}

// flagSet is a subcommand's flags and its -h text.
type flagSet struct {
	*flag.FlagSet
	help func()
	// takesCmd says the command runs a CMD after "--" (its synopsis
	// shows "-- CMD"): its usage errors hint "put CMD after --".
	takesCmd bool
}

// newFlags returns a flag set for a subcommand, with --store and
// --dial-timeout (and --ttl if withTTL). Parse errors print nothing: the
// caller prints one line; -h prints the help.
func (m *Main) newFlags(name, synopsis string, sf *storeFlags, withTTL bool) *flagSet {
	// The set's name is the command's ("lock", "queue put"): usage errors
	// print as "baton: lock: …", with one "baton:".
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), takesCmd: strings.Contains(synopsis, "-- CMD") || strings.Contains(synopsis, "-- [CMD")}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if sf != nil {
		sf.verb = name
		// An empty $BATON_STORE is refused as an empty --store is: set
		// and empty, it is more likely a mistake (a variable that was
		// never filled in) than a wish for the default store.
		def, set := m.lookupEnv("BATON_STORE")
		sf.envEmpty, sf.fs = set && def == "", fs.FlagSet
		if !set {
			def = defaultStore
		}
		fs.StringVar(&sf.url, "store", def, "store `URL` (or $BATON_STORE)")
		fs.DurationVar(&sf.dial, "dial-timeout", store.DefaultDialTimeout, "give up connecting to the store after this long")
		if withTTL {
			sf.withTTL = true
			fs.DurationVar(&sf.ttl, "ttl", baton.DefaultTTL, "session TTL, 1s to 24h: how long a crashed holder keeps the lock (a server may grant another; baton says so)")
		}
		fs.StringVar(&sf.tls.CA, "tls-ca", m.Getenv("BATON_TLS_CA"), "PEM `FILE` of CAs for a TLS store, zks://, etcds:// or rediss:// (or $BATON_TLS_CA; default: the system's)")
		fs.StringVar(&sf.tls.Cert, "tls-cert", m.Getenv("BATON_TLS_CERT"), "PEM `FILE`: client certificate for a TLS store (or $BATON_TLS_CERT)")
		fs.StringVar(&sf.tls.Key, "tls-key", m.Getenv("BATON_TLS_KEY"), "PEM `FILE`: the client certificate's key (or $BATON_TLS_KEY)")
		if metricsCommand(name) {
			addMetricsFlag(fs, &sf.metrics)
		}
	}
	if fs.takesCmd {
		fs.BoolVar(&m.passSecrets, "pass-secrets", false, passSecretsUsage)
	}
	fs.help = func() {
		fmt.Fprintf(m.Stdout, "usage: baton %s\n\nflags:\n", synopsis)
		fs.SetOutput(m.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if strings.Contains(synopsis, "NAME") {
			fmt.Fprintf(m.Stdout, "\n%s", nameRule)
		}
	}
	return fs
}

// addReplicasFlag adds --replicas, for the commands that take Redis
// locks (lock, bench).
func addReplicasFlag(fs *flagSet, sf *storeFlags) {
	fs.IntVar(&sf.replicas, "replicas", 0, "on one Redis master (redis://, redis-sentinel://): a grant, hand-off or renewal counts only once `N` replicas acknowledged it (WAIT), so that a failover to any of them keeps the lock and its token; 0: none")
}

// parseArgs parses flags anywhere before a "--" and returns the
// positional arguments and the command line after "--" (nil if absent).
func parseArgs(fs *flagSet, args []string) (pos, cmd []string, err error) {
	head := args
	for i, a := range args {
		if a == "--" {
			head, cmd = args[:i], append([]string{}, args[i+1:]...)
			if cmd == nil {
				cmd = []string{}
			}
			break
		}
	}
	rest := head
	for n := 0; n <= len(head); n++ {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.help()
				return nil, nil, err
			}
			hint := ""
			if fs.takesCmd && cmd == nil && strings.Contains(err.Error(), "flag provided but not defined") {
				hint = "; put CMD after --"
			}
			return nil, nil, usageErr("%s: %v (see baton %s -h%s)", fs.Name(), err, fs.Name(), hint)
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	var bad error
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "ttl" || f.Name == "dial-timeout" {
			return // storeFlags.checkDurations has their rules
		}
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d < 0 && bad == nil {
				bad = usageErr("%s: --%s %v: must not be negative", fs.Name(), f.Name, d)
			}
		}
	})
	if bad != nil {
		return nil, nil, bad
	}
	return pos, cmd, nil
}

// checkCmd refuses, before anything waits in line, a CMD that cannot be
// found (exit 127) or run (exit 126: a directory, a file without execute
// permission, as a shell says) and a lock on NAME inside a CMD already
// holding it, which would wait for itself forever (exit 2).
func (m *Main) checkCmd(argv []string, heldVar, name string, sf *storeFlags) error {
	if argv == nil {
		return nil
	}
	if heldVar != "" && holds(m.Getenv(heldVar), name, sf) {
		return usageErr("%s=%s: this command already runs under %s; a nested one would wait for itself", heldVar, name, name)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return exitWith(supervise.CannotRunStatus(err), fmt.Errorf("cannot run %s: %v", argv[0], err))
	}
	return nil
}

// nameRule is NAME's rule in the -h texts (baton.CleanName's).
const nameRule = "NAME is one or more elements separated by /, with or without a leading /, kept as written: baton\n" +
	"and a store's own tools given the same string share one lock (the etcd key prefix, as etcdctl lock NAME;\n" +
	"the Redis key, as redsync's), so jobs/x and /jobs/x are two locks there; ZooKeeper needs absolute paths,\n" +
	"so both are the znode /jobs/x. Refused (exit 2): empty elements (a//b, a trailing /), . and .., control\n" +
	"characters and others ZooKeeper refuses (U+D800-U+F8FF, U+FFF0 and up: emoji), over 4096 bytes, a\n" +
	":token/:queue/:waiting/:release ending.\n"

// cleanName returns NAME as written if baton.CleanName takes it (the same
// rule for every store), or a usage error quoting it, before anything is
// dialled.
func cleanName(name string) (string, error) {
	clean, err := baton.CleanName(name)
	if err != nil {
		return "", usageErr("%v", err)
	}
	return clean, nil
}

// storeName is NAME as the store names it (store.URL.LockName). Two
// NAMEs are one lock when their storeNames are equal.
func (sf *storeFlags) storeName(name string) string {
	if u, err := store.Parse(sf.url); err == nil {
		return u.LockName(name)
	}
	return name
}

// holds reports whether held, the value of $BATON_LOCK or
// $BATON_ELECTION (one name, or several space-separated), names the lock
// name names on sf's store.
func holds(held, name string, sf *storeFlags) bool {
	if held == "" {
		return false
	}
	for _, h := range append([]string{held}, strings.Fields(held)...) {
		if c, err := baton.CleanName(h); err == nil && sf.storeName(c) == sf.storeName(name) {
			return true
		}
	}
	return false
}

// oneName returns the single positional argument NAME.
func oneName(fs *flagSet, pos []string) (string, error) {
	if len(pos) != 1 {
		if len(pos) == 0 {
			return "", usageErr("%s: missing NAME", fs.Name())
		}
		if !fs.takesCmd {
			return "", usageErr("%s: unexpected arguments %q (one NAME; see baton %s -h)", fs.Name(), strings.Join(pos[1:], " "), fs.Name())
		}
		return "", usageErr("%s: unexpected arguments %q (put CMD after --)", fs.Name(), strings.Join(pos[1:], " "))
	}
	return cleanName(pos[0])
}

// open parses the store URL and opens it within the dial timeout. With
// --metrics-addr it first starts serving /metrics, until Run returns.
func (m *Main) open(ctx context.Context, sf *storeFlags) (*store.Store, error) {
	u, err := sf.parse()
	if err != nil {
		return nil, err
	}
	if err := store.Check(u, sf.options()); err != nil {
		return nil, usageErr("%v", err)
	}
	if sf.metrics != "" && sf.ms == nil {
		if sf.ms, err = startMetrics(sf.metrics); err != nil {
			return nil, err
		}
		m.atExit(sf.ms.close)
		sf.ms.announce(m.Stderr, sf.metrics)
	}
	s, err := store.Open(ctx, u, sf.options())
	if errors.Is(err, store.ErrBadTLS) || errors.Is(err, baton.ErrInvalidTTL) {
		return nil, usageErr("%v", err)
	}
	if err != nil {
		return nil, err
	}
	if s.CredentialsIgnored() {
		fmt.Fprintf(m.Stderr, "baton: warning: %s has authentication off: the user and password were not checked, and any client may take these locks\n", u)
	}
	if sf.verb != "" {
		// The identity written into our nodes (and Redis lock values)
		// says what holds them (`baton status` shows it); CMD's
		// arguments stay out of it.
		id := baton.DefaultIdentity()
		id.Cmd = strings.TrimSpace("baton " + sf.verb + " " + sf.name)
		s.SetIdentity(id)
	}
	if sf.withTTL {
		if got := s.TTL(); got != sf.ttl {
			fmt.Fprintf(m.Stderr, "baton: warning: the store granted a session TTL of %v, not the %v asked\n", got, sf.ttl)
		}
	}
	return s, nil
}

// closeStore ends the session, bounded.
func closeStore(s *store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = s.Close(ctx)
}

// isTimeout reports whether err is waitFor's --timeout error.
func isTimeout(err error) bool { return errors.Is(err, errTimeout) }

// wrapExit adds context to err's message, keeping its exit status.
func wrapExit(err error, format string, a ...any) error {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err == nil {
			return err
		}
		return exitWith(ee.Code, fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ee.Err))
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), err)
}

// openFor opens the store (a signal cancels the dial) for the recipe
// what: a store that cannot make it (store.Options.Recipe) is refused as a
// usage error before anything is dialled. "" asks for a plain lock.
func (m *Main) openFor(ctx context.Context, sigs *signals, sf *storeFlags, what string) (*store.Store, error) {
	sf.recipe = what
	return waitFor(ctx, sigs, 0, func(ctx context.Context) (*store.Store, error) { return m.open(ctx, sf) })
}

// verb splits off a subcommand's verb, which may follow flags (`baton
// queue --store URL put …`): the flags stay in the arguments returned. A
// -h or --help with no verb is an error wrapping flag.ErrHelp, after the
// verbs have been listed on stdout.
func (m *Main) verb(cmd string, args []string, verbs ...string) (string, []string, error) {
	for i, a := range args {
		if slices.Contains(verbs, a) {
			rest := append(append([]string{}, args[:i]...), args[i+1:]...)
			return a, rest, nil
		}
		if a == "--" {
			break
		}
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprintf(m.Stdout, "usage: baton %s %s [flags] …\n\nRun 'baton %s VERB -h' for a verb's flags.\n", cmd, strings.Join(verbs, "|"), cmd)
			return "", nil, flag.ErrHelp
		}
	}
	if len(args) == 0 {
		return "", nil, usageErr("%s: missing verb: want one of %s", cmd, strings.Join(verbs, ", "))
	}
	return "", nil, usageErr("%s: unknown verb %q: want one of %s", cmd, args[0], strings.Join(verbs, ", "))
}

// checkName is cleanName's verdict alone.
func checkName(name string) error {
	_, err := cleanName(name)
	return err
}
