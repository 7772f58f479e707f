package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// revoke is `baton revoke NAME`: ask the holder of lock NAME to let go
// (baton.Revoke: Curator's revoke marker written into the holder's node).
// It exits 0 once the request is written, 3 if nobody holds NAME.
func (m *Main) revoke(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("revoke", "revoke [--store URL] NAME\n"+
		"       ask the holder of lock NAME to let go (a holder run with --on-revoke term stops CMD and releases;\n"+
		"       Curator's revocable locks too); exit 0 once asked, 3 if nobody holds NAME", &sf, false)
	name, argv, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	if argv != nil {
		return usageErr("revoke: unexpected CMD")
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "revoke")
	if err != nil {
		return err
	}
	defer done()
	n, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (backend.Node, error) { return baton.Revoke(ctx, s.Session, name) })
	if errors.Is(err, baton.ErrNotHeld) {
		return exitWith(exitNotHeld, fmt.Errorf("revoke %s: nobody holds it", name))
	}
	if err != nil {
		return wrapExit(err, "revoke %s", name)
	}
	fmt.Fprintf(m.Stdout, "asked the holder of %s to let go (node %s, token %d)\n", name, n.Path, n.Token)
	return nil
}
