package embedded

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.uber.org/zap"
)

// DefaultCompactEvery is how often `baton serve` compacts and defragments
// unless told otherwise: every acquisition and release writes a revision,
// and without compaction the backend grows until the space quota's alarm
// fails every write.
const DefaultCompactEvery = time.Minute

// defragMinFree is how much of the backend must be free (and more than
// half of it) before a maintenance round defragments it: defragmenting
// blocks every read and write for its duration, so it is done only when
// it gives back space worth having.
const defragMinFree = 1 << 20

// MaintenanceStats are what the maintenance rounds did so far.
type MaintenanceStats struct {
	// Rounds is how many rounds ran.
	Rounds int
	// CompactedRev is the revision history was last compacted to (0 if
	// never).
	CompactedRev int64
	// Defrags is how many times the backend was defragmented.
	Defrags int
	// Disarms is how many times a space-quota (NOSPACE) alarm of this
	// member was disarmed after compaction and defragmentation freed
	// the space.
	Disarms int
	// Size and SizeInUse are the backend's file size and the part of it
	// in use after the last round, in bytes.
	Size, SizeInUse int64

	defragRev int64 // CompactedRev at the last defragmentation
}

// maintain runs a maintenance round every s.cfg.CompactEvery until ctx is
// done: compact history older than the previous round's revision,
// defragment when more than half of the backend is free, and disarm this
// member's space-quota alarm once that brought the backend under half its
// quota.
func (s *Server) maintain(ctx context.Context, e *embed.Etcd, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.CompactEvery)
	defer t.Stop()
	var prev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		prev = s.maintainOnce(ctx, e, prev)
	}
}

// maintainOnce runs one round, compacting to rev, and returns the current
// revision (the next round's target).
func (s *Server) maintainOnce(ctx context.Context, e *embed.Etcd, rev int64) int64 {
	lg := e.GetLogger()
	cur := e.Server.KV().Rev()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var st MaintenanceStats
	s.mu.Lock()
	st = s.stats
	s.mu.Unlock()
	st.Rounds++
	if rev > 0 && rev > st.CompactedRev {
		// Every member of a cluster compacts; all but the first find the
		// revision compacted already. Physical: the call returns once the
		// old revisions are gone from the backend, so that the size
		// measured next counts the space freed.
		_, err := e.Server.Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: true})
		switch {
		case err == nil, errors.Is(err, mvcc.ErrCompacted):
			st.CompactedRev = rev
		default:
			lg.Warn("baton maintenance: compaction failed", zap.Int64("revision", rev), zap.Error(err))
		}
	}
	be := e.Server.Backend()
	size, inUse := be.Size(), be.SizeInUse()
	// With the space alarm raised, a compaction since the last
	// defragmentation is reason enough to defragment: etcd counts the
	// pages a compaction freed only at a later commit, and with the alarm
	// refusing every write nothing may commit again, so the free space
	// measured would not grow and the alarm would stay raised for good.
	noSpace := s.noSpace(e)
	free := size - inUse
	if (free > size/2 && free >= defragMinFree) || (noSpace && st.CompactedRev > st.defragRev) {
		if err := e.Server.Defragment(); err != nil {
			lg.Warn("baton maintenance: defragmentation failed", zap.Error(err))
		} else {
			st.Defrags++
			st.defragRev = st.CompactedRev
			be = e.Server.Backend()
			size, inUse = be.Size(), be.SizeInUse()
		}
	}
	st.Size, st.SizeInUse = size, inUse
	if noSpace && inUse < quotaBytes(e)/2 {
		_, err := e.Server.Alarm(ctx, &pb.AlarmRequest{
			Action:   pb.AlarmRequest_DEACTIVATE,
			MemberID: uint64(e.Server.MemberID()),
			Alarm:    pb.AlarmType_NOSPACE,
		})
		if err != nil {
			lg.Warn("baton maintenance: disarming the space alarm failed", zap.Error(err))
		} else {
			st.Disarms++
			lg.Info("baton maintenance: space alarm disarmed", zap.Int64("in-use", inUse))
		}
	}
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()
	return cur
}

// noSpace reports whether this member has a space-quota alarm raised.
func (s *Server) noSpace(e *embed.Etcd) bool {
	id := uint64(e.Server.MemberID())
	for _, a := range e.Server.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE && a.MemberID == id {
			return true
		}
	}
	return false
}

// quotaBytes is the server's space quota.
func quotaBytes(e *embed.Etcd) int64 {
	if q := e.Server.Cfg.QuotaBackendBytes; q > 0 {
		return q
	}
	return 2 << 30 // etcd's default
}

// Maintenance returns what the maintenance rounds did so far.
func (s *Server) Maintenance() MaintenanceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
