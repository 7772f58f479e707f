package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// memberLine is one member in `baton members --json`.
type memberLine struct {
	ID      string `json:"id"`
	Data    string `json:"data"`
	Session string `json:"session,omitempty"`
}

// members is `baton members [flags] [--json] NAME` (list the group) and
// `baton members [flags] NAME --join ID [--data D] [-- CMD [ARG…]]` (be a
// member while CMD runs).
func (m *Main) members(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("members", "members [--store URL] [--json] NAME\n"+
		"       baton members [--store URL] [--ttl 10s] NAME --join ID [--data D] [-- CMD [ARG…]]", &sf, true)
	join := fs.String("join", "", "be member `ID` of the group (node NAME/ID) while CMD runs, or until a signal without CMD")
	data := fs.String("data", "", "with --join: the member's data")
	asJSON := fs.Bool("json", false, "list as a JSON array of {id, data, session}")
	name, argv, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	switch {
	case *join == "" && argv != nil:
		return usageErr("members: CMD goes with --join ID")
	case *join == "" && *data != "":
		return usageErr("members: --data goes with --join ID")
	case *join != "" && *asJSON:
		return usageErr("members: --json lists; it does not go with --join")
	case *join != "" && (strings.Contains(*join, "/") || checkName(*join) != nil):
		return usageErr("members: --join %q: want an id without '/' or control characters", *join)
	case argv != nil && len(argv) == 0:
		return usageErr("members: no CMD after --")
	}
	if err := m.checkCmd(argv, "", name, &sf); err != nil {
		return err
	}
	sigs := catchSignals()
	defer sigs.stop()
	s, err := m.openFor(ctx, sigs, &sf, "members")
	if err != nil {
		return err
	}
	if *join == "" {
		defer closeStore(s)
		return m.listMembers(ctx, sigs, &sf, s.Session, name, *asJSON)
	}
	return m.joinGroup(ctx, sigs, &sf, s, name, *join, []byte(*data), argv)
}

// listMembers prints the members of name, one "ID DATA" line each (by id),
// or a JSON array.
func (m *Main) listMembers(ctx context.Context, sigs *signals, sf *storeFlags, s *baton.Session, name string, asJSON bool) error {
	ms, err := waitFor(ctx, sigs, sf.dial, baton.NewGroup(s, name).Members)
	if err != nil {
		return wrapExit(err, "members %s", name)
	}
	if asJSON {
		lines := make([]memberLine, 0, len(ms))
		for _, mb := range ms {
			lines = append(lines, memberLine{ID: mb.ID, Data: string(mb.Data), Session: mb.Node.Owner})
		}
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(m.Stdout, "%s\n", b)
		return err
	}
	for _, mb := range ms {
		if _, err := fmt.Fprintf(m.Stdout, "%s\t%s\n", mb.ID, mb.Data); err != nil {
			return err
		}
	}
	return nil
}

// joinGroup keeps member id of name (GroupMember: made again on a new
// session after a loss) while CMD runs, then leaves. Without CMD it prints
// BATON_MEMBER and holds until a signal. It exits with CMD's status.
func (m *Main) joinGroup(ctx context.Context, sigs *signals, sf *storeFlags, first *store.Store, name, id string, data []byte, argv []string) error {
	var mu sync.Mutex
	stores := []*store.Store{first}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range stores {
			closeStore(s)
		}
	}()
	open := func(ctx context.Context) (*baton.Session, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(stores) == 1 && first.Session.Err() == nil {
			return first.Session, nil
		}
		s, err := m.open(ctx, sf)
		if err != nil {
			fmt.Fprintf(m.Stderr, "baton: members %s: reopening the store: %s\n", name, errLine(err))
			return nil, err
		}
		stores = append(stores, s)
		fmt.Fprintf(m.Stderr, "baton: members %s: session lost; member %s joins again on a new session\n", name, id)
		return s.Session, nil
	}
	mem := baton.NewGroupMember(open, name, id, data)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- mem.Run(rctx) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(cleanupTimeout):
		}
	}()
	joined := func(ctx context.Context) (struct{}, error) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := make(chan error, 1)
		go func() { w <- mem.Wait(wctx) }()
		select {
		case err := <-w:
			return struct{}{}, err
		case err := <-done:
			done <- err
			return struct{}{}, err
		}
	}
	if _, err := waitFor(ctx, sigs, 0, joined); err != nil {
		if errors.Is(err, baton.ErrInvalidName) {
			return usageErr("members %s --join %s: %v", name, id, err)
		}
		return wrapExit(err, "members %s --join %s", name, id)
	}
	env := []string{"BATON_GROUP=" + name, "BATON_MEMBER=" + id}
	if argv == nil {
		fmt.Fprintln(m.Stdout, strings.Join(env, " "))
		<-sigs.c
		return nil
	}
	res, err := m.runCmd(argv, env, sigs, runSpec{})
	if err != nil {
		return err
	}
	return exitWith(res.Status, nil)
}
