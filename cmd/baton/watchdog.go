package main

import (
	"context"
	"errors"

	"github.com/batonhq/baton/internal/supervise"
)

// watchdog is the hidden `baton watchdog --grace G --kill-after K` that
// runCmd starts to lead CMD's process group (see internal/supervise): it
// SIGKILLs the group by the hold's loss deadline even if baton is killed,
// stopped or starved.
func (m *Main) watchdog(_ context.Context, args []string) error {
	err := supervise.Watchdog(args, m.Stdin, m.Stdout)
	if errors.Is(err, supervise.ErrUsage) {
		return usageErr("watchdog: [--grace G] [--kill-after K] only (started by baton itself)")
	}
	return err
}
