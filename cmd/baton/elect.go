package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// elect is `baton elect [flags] NAME [--value V] [-- CMD [ARG…]]` and
// `baton elect --observe [--json] NAME`.
func (m *Main) elect(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("elect", "elect [--store URL] [--ttl 10s] [--timeout D] [--grace D] [--kill-after 10s] NAME [--value V] [-- CMD [ARG…]]\n"+
		"       baton elect --requeue [--store URL] [--ttl 10s] [--grace D] [--kill-after 10s] NAME [--value V] -- CMD [ARG…]\n"+
		"       baton elect --observe [--json] NAME", &sf, true)
	value := fs.String("value", "", "this candidate's value `V`, shown to observers (empty: HOST/PID of this baton process)")
	timeout := fs.Duration("timeout", 0, "give up (exit 75) if not leader within this long, counted from the start even when nobody leads (unlike lock and semaphore, which take what is free whatever the timeout); 0 waits forever")
	stopF := addStopFlags(fs)
	observe := fs.Bool("observe", false, "print one line per leader change instead of campaigning")
	asJSON := fs.Bool("json", false, "with --observe: JSON lines")
	requeue := fs.Bool("requeue", false, "campaign again after every turn: run CMD each time we lead, stop it on a loss, until a signal (Curator's LeaderSelector layout)")
	name, argv, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	stop, err := stopF.spec("elect", sf.ttl)
	if err != nil {
		return err
	}
	if *value == "" {
		host, _ := os.Hostname()
		*value = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if argv != nil && len(argv) == 0 {
		return usageErr("elect: no CMD after --")
	}
	if *observe && argv != nil {
		return usageErr("elect: --observe takes no CMD")
	}
	if *asJSON && !*observe {
		return usageErr("elect: --json goes with --observe")
	}
	if err := m.checkCmd(argv, "BATON_ELECTION", name, &sf); err != nil {
		return err
	}
	if *requeue {
		switch {
		case *observe:
			return usageErr("elect: --requeue and --observe exclude each other")
		case *timeout > 0:
			return usageErr("elect: --requeue campaigns until a signal; it takes no --timeout")
		case argv == nil:
			return usageErr("elect: --requeue needs a CMD after --")
		}
		if _, err := sf.parse(); err != nil {
			return err
		}
		sigs := catchSignals()
		defer sigs.stop()
		return m.electRequeue(ctx, sigs, &sf, name, []byte(*value), argv, stop)
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "elect")
	if err != nil {
		return err
	}
	defer done()
	e, err := s.Election(name, "elect")
	if err != nil {
		return usageErr("%v", err)
	}
	if *observe {
		return m.observe(ctx, sigs, s.Session, e, *asJSON)
	}
	_, err = waitFor(ctx, sigs, *timeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, e.Campaign(ctx, []byte(*value))
	})
	if err != nil {
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("elect %s: not leader within %v", name, *timeout))
		}
		return wrapExit(err, "elect %s", name)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = e.Resign(ctx)
	}()
	l := e.Lease()
	env := []string{"BATON_ELECTION=" + name, "BATON_TOKEN=" + strconv.FormatInt(l.Token(), 10)}
	return m.runHeld(sigs, l, "leadership of "+name, env, argv, stop)
}

// leaderLine is one `--observe --json` line.
type leaderLine struct {
	Time    time.Time `json:"time"`
	Leader  bool      `json:"leader"`
	Value   string    `json:"value,omitempty"`
	Session string    `json:"session,omitempty"`
	Token   int64     `json:"token,omitempty"`
	Node    string    `json:"node,omitempty"`
}

// observe prints the leader now and at every change until a signal.
func (m *Main) observe(ctx context.Context, sigs *signals, sess *baton.Session, e *baton.Election, asJSON bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := e.Observe(ctx)
	enc := json.NewEncoder(m.Stdout)
	for {
		select {
		case <-sigs.c:
			return nil
		case ev, ok := <-events:
			if !ok {
				if err := sess.Err(); err != nil {
					return fmt.Errorf("observe %s: %w", e.Name(), err)
				}
				return fmt.Errorf("observe %s: %w", e.Name(), errors.New("watch ended"))
			}
			line := leaderLine{Time: time.Now().UTC(), Leader: ev.HasLeader(), Value: string(ev.Value),
				Session: ev.Node.Owner, Token: ev.Node.Token, Node: ev.Node.Path}
			if asJSON {
				_ = enc.Encode(line)
				continue
			}
			if !line.Leader {
				fmt.Fprintf(m.Stdout, "%s no leader\n", line.Time.Format(time.RFC3339Nano))
				continue
			}
			fmt.Fprintf(m.Stdout, "%s leader %s session %s token %d\n", line.Time.Format(time.RFC3339Nano),
				strconv.Quote(line.Value), dash(line.Session), line.Token)
		}
	}
}
