package main

import (
	"context"

	"github.com/batonhq/baton/internal/store"
)

// What the verbs on one NAME do first: parse their arguments, then catch
// signals and open the store.

// nameArgs parses args for a verb on one NAME: it returns NAME, cleaned
// (oneName) and recorded in sf, and the CMD after "--" (nil without "--",
// empty after a bare "--").
func nameArgs(fs *flagSet, sf *storeFlags, args []string) (name string, argv []string, err error) {
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, err
	}
	if name, err = oneName(fs, pos); err != nil {
		return "", nil, err
	}
	sf.name = name
	return name, argv, nil
}

// openVerb catches signals and opens the store for what (openFor: a
// signal cancels the dial). done closes the store, then stops catching;
// the caller defers it once the open succeeded.
func (m *Main) openVerb(ctx context.Context, sf *storeFlags, what string) (sigs *signals, s *store.Store, done func(), err error) {
	sigs = catchSignals()
	s, err = m.openFor(ctx, sigs, sf, what)
	if err != nil {
		sigs.stop()
		return nil, nil, nil, err
	}
	return sigs, s, func() {
		closeStore(s)
		sigs.stop()
	}, nil
}
