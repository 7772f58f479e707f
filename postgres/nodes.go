package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// dropper loses the replies of a session's next creates (tests).
type dropper struct{ n atomic.Int32 }

func (d *dropper) take() bool {
	if d == nil {
		return false
	}
	for {
		n := d.n.Load()
		if n <= 0 {
			return false
		}
		if d.n.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func attemptID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// scanNode reads nodeCols (and dst, data, if given).
func scanNode(row pgx.Row, data *[]byte) (backend.Node, error) {
	var (
		n     backend.Node
		seqd  bool
		owner *int64
	)
	dst := []any{&n.Path, &n.Name, &n.Kind, &seqd, &n.Seq, &n.Token, &owner, &n.Version, &n.Created}
	if data != nil {
		dst = append(dst, data)
	}
	if err := row.Scan(dst...); err != nil {
		return backend.Node{}, err
	}
	if owner != nil {
		n.Owner = strconv.FormatInt(*owner, 16)
	}
	return n, nil
}

func (c *conn) Create(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, error) {
	if err := validDir(dir, f); err != nil {
		return backend.Node{}, err
	}
	if kind == "" || strings.Contains(kind, "/") {
		return backend.Node{}, fmt.Errorf("%w: node name %q", baton.ErrInvalidName, kind)
	}
	if data == nil {
		data = []byte{}
	}
	attempt := attemptID()
	var n backend.Node
	// A create whose reply is lost is sent again with the same attempt
	// id, which the server recognises: exactly-once.
	err := c.do(ctx, true, func(ctx context.Context) error {
		var err error
		n, err = scanNode(c.pool.QueryRow(ctx, c.q.create, c.id, dir, kind, data,
			f&backend.Ephemeral != 0, f&backend.Sequential != 0, attempt), nil)
		if err == nil && c.drop.take() {
			return errDroppedReply
		}
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeExists {
		return backend.Node{}, fmt.Errorf("%w: %s", baton.ErrExists, backend.Join(dir, kind))
	}
	if err != nil && !errors.As(err, &pe) {
		// Given up (ctx, the session's end) with the create possibly
		// applied or on its way: undo it, so that nothing is left behind.
		c.forget(ctx, attempt)
	}
	return n, err
}

// CreateAndList creates a node as Create does and lists the children of
// dir, itself among them, in one round trip: the schema's create_list
// commits the create, then lists dir as Children does (under the dir's
// key, so that no node shows above a create not yet committed), in a
// transaction of its own.
func (c *conn) CreateAndList(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, []backend.Node, error) {
	if err := validDir(dir, f); err != nil {
		return backend.Node{}, nil, err
	}
	if kind == "" || strings.Contains(kind, "/") {
		return backend.Node{}, nil, fmt.Errorf("%w: node name %q", baton.ErrInvalidName, kind)
	}
	if data == nil {
		data = []byte{}
	}
	attempt := attemptID()
	var nodes []backend.Node
	err := c.do(ctx, true, func(ctx context.Context) error {
		var err error
		nodes, err = scanNodes(c.pool.QueryRow(ctx, c.q.createList, c.id, dir, kind, data,
			f&backend.Ephemeral != 0, f&backend.Sequential != 0, attempt))
		if err == nil && c.drop.take() {
			return errDroppedReply
		}
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeExists {
		return backend.Node{}, nil, fmt.Errorf("%w: %s", baton.ErrExists, backend.Join(dir, kind))
	}
	if err != nil && !errors.As(err, &pe) {
		c.forget(ctx, attempt)
	}
	if err != nil {
		return backend.Node{}, nil, err
	}
	return nodes[0], nodes[1:], nil
}

// scanNodes reads create_list's arrays, one element a node.
func scanNodes(row pgx.Row) ([]backend.Node, error) {
	var (
		paths, names, kinds []string
		seqds               []bool
		seqs, tokens, vers  []int64
		owners              []*int64
		created             []time.Time
	)
	if err := row.Scan(&paths, &names, &kinds, &seqds, &seqs, &tokens, &owners, &vers, &created); err != nil {
		return nil, err
	}
	for _, l := range []int{len(names), len(kinds), len(seqds), len(seqs), len(tokens), len(owners), len(vers), len(created)} {
		if l != len(paths) {
			return nil, fmt.Errorf("postgres: create_list returned arrays of %d and %d nodes", len(paths), l)
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("postgres: create_list returned no node")
	}
	out := make([]backend.Node, len(paths))
	for i := range paths {
		out[i] = backend.Node{Path: paths[i], Name: names[i], Kind: kinds[i], Seq: seqs[i], Token: tokens[i],
			Version: vers[i], Created: created[i]}
		if owners[i] != nil {
			out[i].Owner = strconv.FormatInt(*owners[i], 16)
		}
	}
	return out, nil
}

// forget undoes a create given up on (the schema's forget), trying for up
// to closeTimeout, then in the background while the session lasts.
func (c *conn) forget(ctx context.Context, attempt string) {
	once := func(ctx context.Context) bool {
		fctx, cancel := context.WithTimeout(ctx, closeTimeout)
		defer cancel()
		_, err := c.pool.Exec(fctx, c.q.forget, c.id, attempt)
		return err == nil
	}
	if c.Err() != nil || once(context.WithoutCancel(ctx)) {
		return // a session that ended took its nodes with it
	}
	c.fg.Add(1)
	go func() {
		defer c.fg.Done()
		for backoff := firstBackoff; c.life.Err() == nil; backoff = min(2*backoff, maxBackoff) {
			if once(c.life) {
				return
			}
			c.sleep(backoff)
		}
	}()
}

// errDroppedReply is the lost reply of a create that DropCreateReply
// arranged (tests): the create was applied.
var errDroppedReply = fmt.Errorf("postgres: create reply lost: %w", io.ErrUnexpectedEOF)

// Children lists dir under its key (the schema's children): it waits for
// the creates in flight there, so that no node shows above one not yet
// committed.
func (c *conn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	return c.list(ctx, c.q.children, dir)
}

// Relist lists dir without its key, for a waiter whose node me was listed
// under it since its create (backend.Relister): every create in dir with a
// token below me.Token had then committed or failed, so the listing is
// complete up to me. It does not wait for the creates in flight, which
// all queue after me.
//
// A listing without me, of a session whose end has not reached this
// client yet (the sweep that expired it notified its listening
// connection, and that notification may still be on its way), reports
// the session's end, as it would once the notification came, rather than
// a node gone from a live session: it asks the server whether the session
// is still there.
func (c *conn) Relist(ctx context.Context, dir string, me backend.Node) ([]backend.Node, error) {
	kids, err := c.list(ctx, c.q.relist, dir)
	if err != nil || slices.ContainsFunc(kids, func(k backend.Node) bool { return k.Path == me.Path }) {
		return kids, err
	}
	return kids, c.checkSession(ctx)
}

// checkSession ends the session with ErrSessionExpired, and returns that,
// if the server no longer has it; nil if it does.
func (c *conn) checkSession(ctx context.Context) error {
	var alive bool
	err := c.do(ctx, true, func(ctx context.Context) error {
		return c.pool.QueryRow(ctx, c.q.alive, c.id).Scan(&alive)
	})
	if err != nil {
		return err
	}
	if !alive {
		c.end(baton.ErrSessionExpired)
		return c.Err()
	}
	return nil
}

func (c *conn) list(ctx context.Context, query, dir string) ([]backend.Node, error) {
	if err := validPath(dir); err != nil {
		return nil, err
	}
	var out []backend.Node
	err := c.do(ctx, true, func(ctx context.Context) error {
		out = out[:0]
		rows, err := c.pool.Query(ctx, query, dir)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n, err := scanNode(rows, nil)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	return out, err
}

func (c *conn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	if err := validPath(path); err != nil {
		return nil, backend.Node{}, err
	}
	var (
		n    backend.Node
		data []byte
	)
	err := c.do(ctx, true, func(ctx context.Context) error {
		var err error
		n, err = scanNode(c.pool.QueryRow(ctx, c.q.get, path), &data)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, backend.Node{}, fmt.Errorf("%w: %s", baton.ErrNotFound, path)
	}
	if err != nil {
		return nil, backend.Node{}, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, n, nil
}

func (c *conn) Delete(ctx context.Context, n backend.Node) error {
	return c.do(ctx, true, func(ctx context.Context) error {
		_, err := c.pool.Exec(ctx, c.q.remove, c.id, n.Path, n.Token)
		return err
	})
}

// Commit applies ops in one transaction whose first statement locks the
// guard's row (that incarnation): a delete of the guard, or its session's
// expiry, waits for the commit, and a guard already gone fails it.
func (c *conn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	for _, op := range ops {
		if op.Kind == backend.OpCreate {
			if err := validDir(op.Dir, op.Flags); err != nil {
				return err
			}
		}
	}
	// Not idempotent (a sequential create, a write without IfVersion): run
	// again only if the statement was never sent.
	return c.do(ctx, false, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error { return c.commit(ctx, tx, guard, ops) })
	})
}

func (c *conn) commit(ctx context.Context, tx pgx.Tx, guard backend.Node, ops []backend.Op) error {
	if _, err := tx.Exec(ctx, "SELECT set_config('baton.by', $1, true)", c.by); err != nil {
		return err
	}
	if guard.Path != "" {
		var one int
		err := tx.QueryRow(ctx, c.q.guard, guard.Path, guard.Token).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", backend.ErrGuard, guard.Path)
		}
		if err != nil {
			return err
		}
	}
	for _, op := range ops {
		var err error
		switch op.Kind {
		case backend.OpSet:
			data := op.Data
			if data == nil {
				data = []byte{}
			}
			err = c.applied(ctx, tx, op, tx.QueryRow(ctx, c.q.set, op.Node.Path, op.Node.Token, data, op.IfVersion, op.Node.Version))
		case backend.OpDelete:
			err = c.applied(ctx, tx, op, tx.QueryRow(ctx, c.q.del, op.Node.Path, op.Node.Token, op.IfVersion, op.Node.Version))
		case backend.OpCreate:
			data := op.Data
			if data == nil {
				data = []byte{}
			}
			_, err = scanNode(tx.QueryRow(ctx, c.q.create, c.id, op.Dir, op.Name, data,
				op.Flags&backend.Ephemeral != 0, op.Flags&backend.Sequential != 0, attemptID()), nil)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == codeExists {
				err = fmt.Errorf("%w: %s", baton.ErrExists, backend.Join(op.Dir, op.Name))
			}
		default:
			err = fmt.Errorf("postgres: unknown op %d", op.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applied turns an update or delete that matched no row into ErrNotFound
// or ErrConflict.
func (c *conn) applied(ctx context.Context, tx pgx.Tx, op backend.Op, row pgx.Row) error {
	var one int
	err := row.Scan(&one)
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var v int64
	err = tx.QueryRow(ctx, c.q.exists, op.Node.Path, op.Node.Token).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %s", baton.ErrNotFound, op.Node.Path)
	case err != nil:
		return err
	default:
		return fmt.Errorf("%w: %s is at version %d, not %d", baton.ErrConflict, op.Node.Path, v, op.Node.Version)
	}
}

// validDir checks the parent of a node to create. A plain node may sit at
// the top of the keyspace (dir ""); a sequential node needs a parent.
func validDir(dir string, f backend.Flags) error {
	if dir == "" && f&backend.Sequential == 0 {
		return nil
	}
	return validPath(dir)
}

func validPath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty name", baton.ErrInvalidName)
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q has a control character", baton.ErrInvalidName, p)
		}
	}
	for _, el := range strings.Split(p, "/") {
		if el == "." || el == ".." {
			return fmt.Errorf("%w: %q has a relative element", baton.ErrInvalidName, p)
		}
	}
	return nil
}

// ms is a duration in milliseconds as the server reports it.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func isNotFound(err error) bool { return errors.Is(err, baton.ErrNotFound) }

// Dirs lists the directories holding nodes whose paths start with prefix,
// sorted, at most limit (more says some were left out): what `baton ui`
// lists as the recipe names under a prefix, as it lists etcd's keys.
func (c *conn) Dirs(ctx context.Context, prefix string, limit int) (dirs []string, more bool, err error) {
	err = c.do(ctx, true, func(ctx context.Context) error {
		dirs = dirs[:0]
		rows, err := c.pool.Query(ctx, "SELECT DISTINCT dir COLLATE \"C\" AS d FROM "+c.q.schema+".nodes WHERE left(dir, length($1)) = $1 AND dir <> '' ORDER BY d LIMIT $2", prefix, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				return err
			}
			dirs = append(dirs, d)
		}
		return rows.Err()
	})
	if len(dirs) > limit {
		dirs, more = dirs[:limit], true
	}
	return dirs, more, err
}
