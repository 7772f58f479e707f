package baton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/backend"
)

// participantsField is the field of a DoubleBarrier participant's node
// data (its identity, a JSON object) that records the number of
// participants it waits for. Peers' nodes (Curator's, kazoo's) have none
// and are not checked.
const participantsField = "participants"

// withParticipants adds n to a node's JSON data.
func withParticipants(data []byte, n int) []byte {
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		m = map[string]any{}
	}
	m[participantsField] = n
	b, _ := json.Marshal(m)
	return b
}

// participantsOf reads the number a participant's node records, if any.
func participantsOf(data []byte) (int, bool) {
	var w map[string]json.RawMessage
	if json.Unmarshal(data, &w) != nil {
		return 0, false
	}
	var n int
	if raw, ok := w[participantsField]; !ok || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

// countParticipants counts the participants among kids that wait for our
// number (or say none: a peer's), and refuses ours (ErrParticipantsMismatch)
// when the first participant to record a number, by creation order,
// recorded another: the first arrival's number rules. Once every
// participant has left, nothing is recorded any more, so the number can
// change between rounds.
func (d *DoubleBarrier) countParticipants(ctx context.Context, c backend.Conn, kids []backend.Node) (int, error) {
	count := 0
	var first backend.Node
	firstN := 0
	for _, k := range kids {
		if k.Name == readyName {
			continue
		}
		data, n, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue // left since the listing
		}
		if err != nil {
			return 0, err
		}
		p, ok := participantsOf(data)
		if !ok || p == d.n {
			count++
		}
		if ok && (first.Path == "" || n.Token < first.Token) {
			first, firstN = n, p
		}
	}
	if first.Path != "" && firstN != d.n {
		return 0, fmt.Errorf("%w: %s is a double barrier of %d participants, not %d (the first to enter said so; the number can change once all have left)", ErrParticipantsMismatch, d.name, firstN, d.n)
	}
	return count, nil
}
