package baton

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/batonhq/baton/backend"
)

// permitsName is the node, under a Semaphore's name, that records its
// number of permits, so that a client asking for another number is
// refused (ErrPermitsMismatch) instead of letting too many in. Its data
// is the number as 4 bytes big-endian, the format of Curator's
// SharedCount: a Curator InterProcessSemaphoreV2 can share the count
// through a SharedCount at NAME/permits.
const permitsName = "permits"

// MaxPermits is the most permits a Semaphore may have: its record of n
// is a 32-bit signed int, as Curator's SharedCount stores it.
const MaxPermits = math.MaxInt32

// encodeCount is n as Curator's SharedCount stores it.
func encodeCount(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// decodeCount reads a SharedCount's data.
func decodeCount(b []byte) (int, bool) {
	if len(b) != 4 {
		return 0, false
	}
	return int(int32(binary.BigEndian.Uint32(b))), true
}

// checkPermits compares the semaphore's recorded number of permits with
// ours, holding the acquirers' line (turn): no lease can be added
// meanwhile. No record yet: ours is recorded. A different one is
// refused while a lease is held or waited for, and replaced by ours when
// none is, so the number can change once the semaphore is empty.
func (m *Semaphore) checkPermits(ctx context.Context, c backend.Conn, turn backend.Node) error {
	data, rec, err := c.Get(ctx, backend.Join(m.name, permitsName))
	op := backend.Op{Kind: backend.OpCreate, Dir: m.name, Name: permitsName, Data: encodeCount(m.n)}
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return err
	default:
		if n, ok := decodeCount(data); ok && n == m.n {
			return nil
		}
		leases, err := c.Children(ctx, m.leasesDir())
		if err != nil {
			return err
		}
		if held := countKind(leases, backend.KindLease); held > 0 {
			n, _ := decodeCount(data)
			return fmt.Errorf("%w: %s is a semaphore of %d permits, not %d (%d leases held or waited for; the number can change once none is)", ErrPermitsMismatch, m.name, n, m.n, held)
		}
		op = backend.Op{Kind: backend.OpSet, Node: rec, Data: encodeCount(m.n)}
	}
	if err := c.Commit(ctx, turn, op); err != nil {
		return fmt.Errorf("semaphore %s: recording %d permits: %w", m.name, m.n, err)
	}
	return nil
}
