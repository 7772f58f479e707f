package main

import (
	"context"

	"github.com/batonhq/baton/internal/store"
)

// statusReader reads a name's status: a statusSource without its wait.
type statusReader interface {
	read(ctx context.Context) (statusReport, error)
}

// lineReaderFor reads name on s for the wait display (Store.Glance);
// holderTTLs asks for the time left on the holders' leases (etcd), a
// request each.
func lineReaderFor(s *store.Store, name string, holderTTLs bool) statusReader {
	return &lineReader{u: s.URL, g: s.Glance(name, holderTTLs)}
}

// lineReader is a name's status for the wait display. The name's other
// spelling, where it is another lock (status_spelling.go), is read once,
// by the first read of the wait.
type lineReader struct {
	u         store.URL
	g         store.Glance
	other     *otherSpelling
	otherRead bool
}

func (r *lineReader) read(ctx context.Context) (statusReport, error) {
	rep, err := r.g.Read(ctx)
	if err != nil {
		return statusReport{}, badTLS(err)
	}
	if !r.otherRead {
		r.other, r.otherRead = otherOf(ctx, r.g), true
	}
	return statusReport{Store: r.u.String(), Held: rep.Held(), Report: rep, Other: r.other}, nil
}
