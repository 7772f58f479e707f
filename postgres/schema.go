package postgres

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultSchema is the schema baton's tables live in unless WithSchema
// (or the URL's schema= parameter) names another.
const DefaultSchema = "baton"

// SchemaVersion is the version of the tables this package uses; Init
// migrates a schema to it.
const SchemaVersion = 3

// ErrSchema is wrapped by the error of Open when the schema is missing or
// out of date and cannot be migrated (no CREATE privilege: run `baton
// postgres init` as a user who has it), or is newer than this package.
var ErrSchema = errors.New("postgres: baton schema")

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func validSchema(s string) error {
	if !schemaName.MatchString(s) {
		return fmt.Errorf("%w: schema name %q: lower-case letters, digits and _, at most 48, not starting with a digit", ErrSchema, s)
	}
	return nil
}

// channelPrefix is the prefix of the notification channel of each
// session of schema s ("<prefix><session id>"): distinct per schema, so
// that two schemas in one database never wake each other's waiters.
func channelPrefix(s string) string {
	h := md5.Sum([]byte(s))
	return "baton_" + hex.EncodeToString(h[:4]) + "_"
}

// migrations[i] takes a schema from version i to i+1. "S." stands for the
// schema, "CHAN_" for the channel prefix.
var migrations = []string{`
CREATE SEQUENCE S.tokens;
CREATE SEQUENCE S.session_ids;

-- A session: a client's liveness, counted on the server's clock. expires
-- moves forward at each renewal (renew); a session past expires is
-- deleted by whoever next needs it gone (sweep), and its ephemeral nodes
-- and watches with it.
CREATE TABLE S.sessions (
	id      bigint PRIMARY KEY DEFAULT nextval('S.session_ids'),
	ttl     interval NOT NULL,
	expires timestamptz NOT NULL,
	started timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX sessions_expires ON S.sessions (expires);

-- A node: a child of dir. token (from one sequence) is the fencing token,
-- strictly increasing and never reused; a sequential node's seq is its
-- token. attempt makes a create retried after a lost reply exactly-once.
CREATE TABLE S.nodes (
	path       text PRIMARY KEY,
	dir        text NOT NULL,
	name       text NOT NULL,
	kind       text NOT NULL,
	sequential boolean NOT NULL,
	seq        bigint NOT NULL,
	token      bigint NOT NULL UNIQUE,
	owner      bigint REFERENCES S.sessions (id) ON DELETE CASCADE,
	attempt    text UNIQUE,
	data       bytea NOT NULL,
	version    bigint NOT NULL DEFAULT 0,
	created    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX nodes_dir ON S.nodes (dir, seq);
CREATE INDEX nodes_owner ON S.nodes (owner);

-- A one-shot watch of session on path: kind 'gone' (that incarnation,
-- token, deleted), 'data' (written or deleted), 'exists' (created),
-- 'kids' (a child of path created or deleted). The change that fires it
-- deletes it and notifies the session's channel alone with "wid by".
CREATE TABLE S.watches (
	session bigint NOT NULL,
	wid     bigint NOT NULL,
	path    text NOT NULL,
	kind    text NOT NULL,
	token   bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (session, wid)
);
CREATE INDEX watches_path ON S.watches (path);

-- The attempts of creates the client gave up on (cancelled in flight):
-- a create of one of them that reaches the server afterwards does
-- nothing (see forget).
CREATE TABLE S.forgotten (
	attempt text PRIMARY KEY,
	session bigint NOT NULL REFERENCES S.sessions (id) ON DELETE CASCADE
);
CREATE INDEX forgotten_session ON S.forgotten (session);

CREATE FUNCTION S.lockkey(p text) RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('S.' || p, 0) $$;

-- fire sends the watches of p_path of the given kinds. A watcher takes
-- the path's advisory lock exclusively while it checks and registers, a
-- change takes it shared before reading the watches: so either the
-- watcher sees the change, or the change sees the watch.
CREATE FUNCTION S.fire(p_path text, p_kinds text[], p_token bigint) RETURNS void LANGUAGE plpgsql
AS $$
DECLARE r record;
BEGIN
	PERFORM pg_advisory_xact_lock_shared(S.lockkey(p_path));
	FOR r IN DELETE FROM S.watches WHERE path = p_path AND kind = ANY (p_kinds) AND token IN (0, p_token)
		RETURNING session, wid LOOP
		PERFORM pg_notify('CHAN_' || r.session, r.wid || ' ' || coalesce(current_setting('baton.by', true), ''));
	END LOOP;
END $$;

CREATE FUNCTION S.nodes_changed() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM S.fire(NEW.path, '{exists}', 0);
		PERFORM S.fire(NEW.dir, '{kids}', 0);
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM S.fire(OLD.path, '{gone,data}', OLD.token);
		PERFORM S.fire(OLD.dir, '{kids}', 0);
	ELSIF NEW.version <> OLD.version THEN
		PERFORM S.fire(OLD.path, '{data}', OLD.token);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER nodes_changed AFTER INSERT OR UPDATE OR DELETE ON S.nodes
	FOR EACH ROW EXECUTE FUNCTION S.nodes_changed();

-- A session deleted (closed, expired): its client is told at once, and
-- its watches go with it. BEFORE the delete, so that the client hears of
-- it ahead of the deletes of its nodes (the foreign key's cascade, an
-- AFTER trigger): a waiter of that session returns the session's end,
-- not the loss of its node.
CREATE FUNCTION S.session_ended() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
	DELETE FROM S.watches WHERE session = OLD.id;
	PERFORM pg_notify('CHAN_' || OLD.id, 'ended');
	RETURN OLD;
END $$;
CREATE TRIGGER session_ended BEFORE DELETE ON S.sessions
	FOR EACH ROW EXECUTE FUNCTION S.session_ended();

-- sweep deletes the sessions past their expiry on the server's clock,
-- with their ephemeral nodes (notifying their watchers).
CREATE FUNCTION S.sweep() RETURNS integer LANGUAGE plpgsql
AS $$
DECLARE n integer;
BEGIN
	PERFORM set_config('baton.by', '', true);
	DELETE FROM S.sessions WHERE id IN (
		SELECT id FROM S.sessions WHERE expires < clock_timestamp() ORDER BY id FOR UPDATE SKIP LOCKED);
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;

-- open starts a session of ttl.
CREATE FUNCTION S.open(p_ttl interval) RETURNS bigint LANGUAGE sql
AS $$ INSERT INTO S.sessions (ttl, expires) VALUES (p_ttl, clock_timestamp() + p_ttl) RETURNING id $$;

-- renew moves a live session's expiry to a TTL from now, and sweeps.
-- A session already past its expiry is never renewed: false.
CREATE FUNCTION S.renew(p_session bigint) RETURNS boolean LANGUAGE plpgsql
AS $$
DECLARE ok boolean;
BEGIN
	UPDATE S.sessions SET expires = clock_timestamp() + ttl
		WHERE id = p_session AND expires > clock_timestamp() RETURNING true INTO ok;
	PERFORM S.sweep();
	RETURN coalesce(ok, false);
END $$;

-- create makes a node (see Conn.Create). A call with an attempt already
-- applied returns that node: a retry after a lost reply.
CREATE FUNCTION S.create(p_session bigint, p_dir text, p_kind text, p_data bytea,
	p_ephemeral boolean, p_sequential boolean, p_attempt text) RETURNS SETOF S.nodes LANGUAGE plpgsql
AS $$
DECLARE n S.nodes; t bigint; nm text;
BEGIN
	PERFORM set_config('baton.by', p_session::text, true);
	-- One attempt at a time with its forget (see forget).
	PERFORM pg_advisory_xact_lock(hashtextextended('S.attempt ' || p_attempt, 0));
	IF EXISTS (SELECT 1 FROM S.forgotten WHERE attempt = p_attempt) THEN
		RAISE EXCEPTION 'baton: create % given up', p_attempt USING ERRCODE = 'BA003';
	END IF;
	SELECT * INTO n FROM S.nodes WHERE attempt = p_attempt;
	IF FOUND THEN
		RETURN NEXT n;
		RETURN;
	END IF;
	PERFORM 1 FROM S.sessions WHERE id = p_session AND expires > clock_timestamp() FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'baton: session % expired', p_session USING ERRCODE = 'BA001';
	END IF;
	-- Creates in one dir take their tokens one at a time, each until its
	-- commit, so that tokens are in commit order there: a reader never
	-- sees a node whose token is above one committed after it.
	PERFORM pg_advisory_xact_lock(hashtext('S.' || p_dir), 1);
	t := nextval('S.tokens');
	nm := p_kind;
	IF p_sequential THEN
		nm := p_kind || '-' || CASE WHEN t >= 1000000000 THEN t::text ELSE lpad(t::text, 10, '0') END;
	END IF;
	INSERT INTO S.nodes (path, dir, name, kind, sequential, seq, token, owner, attempt, data)
		VALUES (CASE WHEN p_dir = '' OR right(p_dir, 1) = '/' THEN p_dir || nm ELSE p_dir || '/' || nm END,
			p_dir, nm, p_kind, p_sequential, t, t,
			CASE WHEN p_ephemeral THEN p_session END, p_attempt, p_data)
		ON CONFLICT (path) DO NOTHING
		RETURNING * INTO n;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'baton: % exists', nm USING ERRCODE = 'BA002';
	END IF;
	RETURN NEXT n;
END $$;

-- forget undoes a create the client gave up on, whether it was applied,
-- is under way, or is yet to reach the server: under the attempt's lock,
-- it marks the attempt forgotten (a create arriving later does nothing)
-- and deletes the node if the create was applied.
CREATE FUNCTION S.forget(p_session bigint, p_attempt text) RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
	PERFORM set_config('baton.by', p_session::text, true);
	PERFORM pg_advisory_xact_lock(hashtextextended('S.attempt ' || p_attempt, 0));
	INSERT INTO S.forgotten (attempt, session)
		SELECT p_attempt, p_session WHERE EXISTS (SELECT 1 FROM S.sessions WHERE id = p_session)
		ON CONFLICT DO NOTHING;
	DELETE FROM S.nodes WHERE attempt = p_attempt;
END $$;

-- remove deletes that incarnation of a node (any, with token 0).
CREATE FUNCTION S.remove(p_session bigint, p_path text, p_token bigint) RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
	PERFORM set_config('baton.by', p_session::text, true);
	DELETE FROM S.nodes WHERE path = p_path AND (p_token = 0 OR token = p_token);
END $$;

-- watch checks a condition and, unless it holds, registers a one-shot
-- watch wid for it, under the path's advisory lock (see fire). It drops
-- the session's watch p_old, if any (a wait going round again). state is
-- 'met', 'gone' (WaitChanged: the node is gone) or 'wait'; left is the
-- time until the earliest expiry of an owner the wait depends on, on the
-- server's clock, for the waiter's timer; kids the children's paths and
-- tokens for a 'kids' watch, which the client compares.
CREATE FUNCTION S.watch(p_session bigint, p_wid bigint, p_old bigint, p_path text, p_kind text,
	p_token bigint, p_version bigint, OUT state text, OUT left_ms bigint, OUT kid_paths text[], OUT kid_tokens bigint[])
LANGUAGE plpgsql
AS $$
DECLARE n S.nodes;
BEGIN
	-- The lock before the old watch's row: a change firing that watch
	-- holds the lock shared while it deletes the row, and taking them in
	-- the other order would deadlock with it.
	PERFORM pg_advisory_xact_lock(S.lockkey(p_path));
	IF p_old <> 0 THEN
		DELETE FROM S.watches WHERE session = p_session AND wid = p_old;
	END IF;
	state := 'wait';
	IF p_kind = 'kids' THEN
		SELECT array_agg(k.path), array_agg(k.token), (extract(epoch FROM min(s.expires) - clock_timestamp()) * 1000)::bigint
			INTO kid_paths, kid_tokens, left_ms
			FROM S.nodes k LEFT JOIN S.sessions s ON s.id = k.owner WHERE k.dir = p_path;
	ELSE
		SELECT * INTO n FROM S.nodes WHERE path = p_path AND (p_token = 0 OR token = p_token);
		IF p_kind = 'exists' THEN
			IF FOUND THEN state := 'met'; END IF;
		ELSIF NOT FOUND THEN
			state := CASE WHEN p_kind = 'data' THEN 'gone' ELSE 'met' END;
		ELSIF p_kind = 'data' AND n.version <> p_version THEN
			state := 'met';
		ELSIF n.owner IS NOT NULL THEN
			SELECT (extract(epoch FROM s.expires - clock_timestamp()) * 1000)::bigint INTO left_ms
				FROM S.sessions s WHERE s.id = n.owner;
		END IF;
	END IF;
	IF state = 'wait' THEN
		INSERT INTO S.watches (session, wid, path, kind, token) VALUES (p_session, p_wid, p_path, p_kind, p_token)
			ON CONFLICT DO NOTHING; -- a retry after a lost reply
	END IF;
END $$;
`, `
-- Version 2: creates in one dir no longer wait for each other's commits,
-- watches write no WAL, and a create can list its siblings in the same
-- round trip.

-- Watches are per-connection state: a session's waits register them over
-- its pool and hear of them on its listening connection. Unlogged, a
-- transaction that writes only watches (a wait) commits without waiting
-- for a WAL flush. A crash empties the table; it also broke every
-- client's listening connection, and a client that dials again wakes
-- every wait to check its condition again and register its watch anew.
ALTER TABLE S.watches SET UNLOGGED;

-- The order of a dir's tokens. A reader of a dir's children must never
-- see a node whose token is above that of a create not yet committed
-- (else two contenders could both find themselves first). So a create
-- takes the dir's key (lockkey2, below) SHARED before it draws its token
-- and holds it until it commits; creates do not wait for each other. A
-- reader that needs the consistent prefix (children, create_list's
-- listing) takes the key EXCLUSIVELY, in a transaction of its own, and
-- then reads in a statement of its own (READ COMMITTED: a fresh snapshot,
-- taken after the lock is granted).
--
-- Why that suffices: let a reader see a committed node of token t, and
-- let u < t be another create's token in that dir. The create of u took
-- the key before it drew u, so before t was drawn, so before t's create
-- committed, so before the reader's snapshot. The reader holds the key
-- exclusively from its grant to past its snapshot, and t's create held it
-- shared until its commit: so t's commit, and u's lock, came before the
-- grant, and the grant waited for u's create to commit or abort. The
-- reader sees u, or u never exists. A create that asks for the key while
-- a reader waits for it queues behind the reader (PostgreSQL grants in
-- order of request to conflicting modes), so a stream of creates cannot
-- keep a reader waiting.
--
-- Deadlock: no transaction that holds the key shared ever asks for it
-- exclusively (a create and its listing are two transactions), and a
-- reader holds nothing else while it waits.
CREATE FUNCTION S.lockkey2(p_dir text) RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('S.creates ' || p_dir, 0) $$;

-- children lists a dir's children under its key (see above), in the
-- order Children returns them.
CREATE FUNCTION S.children(p_dir text) RETURNS SETOF S.nodes LANGUAGE plpgsql
AS $$
BEGIN
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'baton: children needs READ COMMITTED, not %', current_setting('transaction_isolation')
			USING ERRCODE = 'BA004';
	END IF;
	PERFORM pg_advisory_xact_lock(S.lockkey2(p_dir));
	RETURN QUERY SELECT * FROM S.nodes WHERE dir = p_dir
		ORDER BY sequential DESC, CASE WHEN sequential THEN seq ELSE 0 END, name COLLATE "C";
END $$;

-- create_node is version 1's create with the dir's key shared. The old
-- create goes: a client of version 1 still running would list without
-- the key, trusting creates to commit in token order; its creates fail
-- instead ("function ... create does not exist"), and it takes no lock
-- it could share with another.
DROP FUNCTION S.create(bigint, text, text, bytea, boolean, boolean, text);
CREATE FUNCTION S.create_node(p_session bigint, p_dir text, p_kind text, p_data bytea,
	p_ephemeral boolean, p_sequential boolean, p_attempt text) RETURNS SETOF S.nodes LANGUAGE plpgsql
AS $$
DECLARE n S.nodes; t bigint; nm text;
BEGIN
	PERFORM set_config('baton.by', p_session::text, true);
	-- One attempt at a time with its forget (see forget).
	PERFORM pg_advisory_xact_lock(hashtextextended('S.attempt ' || p_attempt, 0));
	IF EXISTS (SELECT 1 FROM S.forgotten WHERE attempt = p_attempt) THEN
		RAISE EXCEPTION 'baton: create % given up', p_attempt USING ERRCODE = 'BA003';
	END IF;
	SELECT * INTO n FROM S.nodes WHERE attempt = p_attempt;
	IF FOUND THEN
		RETURN NEXT n;
		RETURN;
	END IF;
	PERFORM 1 FROM S.sessions WHERE id = p_session AND expires > clock_timestamp() FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'baton: session % expired', p_session USING ERRCODE = 'BA001';
	END IF;
	-- The dir's key, shared, before the token and until the commit: see
	-- lockkey2.
	PERFORM pg_advisory_xact_lock_shared(S.lockkey2(p_dir));
	t := nextval('S.tokens');
	nm := p_kind;
	IF p_sequential THEN
		nm := p_kind || '-' || CASE WHEN t >= 1000000000 THEN t::text ELSE lpad(t::text, 10, '0') END;
	END IF;
	INSERT INTO S.nodes (path, dir, name, kind, sequential, seq, token, owner, attempt, data)
		VALUES (CASE WHEN p_dir = '' OR right(p_dir, 1) = '/' THEN p_dir || nm ELSE p_dir || '/' || nm END,
			p_dir, nm, p_kind, p_sequential, t, t,
			CASE WHEN p_ephemeral THEN p_session END, p_attempt, p_data)
		ON CONFLICT (path) DO NOTHING
		RETURNING * INTO n;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'baton: % exists', nm USING ERRCODE = 'BA002';
	END IF;
	RETURN NEXT n;
END $$;

-- create_list is create, committed, then children (two transactions in
-- one call, one round trip): the node first in the arrays, its siblings
-- (itself among them) after it. A call again with the same attempt
-- returns the same node: a retry after a lost reply.
CREATE PROCEDURE S.create_list(p_session bigint, p_dir text, p_kind text, p_data bytea,
	p_ephemeral boolean, p_sequential boolean, p_attempt text,
	OUT paths text[], OUT names text[], OUT kinds text[], OUT seqds boolean[], OUT seqs bigint[],
	OUT tokens bigint[], OUT owners bigint[], OUT versions bigint[], OUT createds timestamptz[])
LANGUAGE plpgsql
AS $$
DECLARE n S.nodes;
BEGIN
	SELECT * INTO STRICT n FROM S.create_node(p_session, p_dir, p_kind, p_data, p_ephemeral, p_sequential, p_attempt);
	COMMIT;
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'baton: create_list needs READ COMMITTED, not %', current_setting('transaction_isolation')
			USING ERRCODE = 'BA004';
	END IF;
	PERFORM pg_advisory_xact_lock(S.lockkey2(p_dir));
	SELECT array_agg(k.path), array_agg(k.name), array_agg(k.kind), array_agg(k.sequential), array_agg(k.seq),
		array_agg(k.token), array_agg(k.owner), array_agg(k.version), array_agg(k.created)
		INTO paths, names, kinds, seqds, seqs, tokens, owners, versions, createds
		FROM (SELECT * FROM S.nodes WHERE dir = p_dir
			ORDER BY sequential DESC, CASE WHEN sequential THEN seq ELSE 0 END, name COLLATE "C") k;
	IF NOT (n.path = ANY (coalesce(paths, '{}'))) AND NOT EXISTS (SELECT 1 FROM S.sessions WHERE id = p_session) THEN
		-- Gone with its session between the two transactions: as create
		-- says of a session that has expired.
		RAISE EXCEPTION 'baton: session % expired', p_session USING ERRCODE = 'BA001';
	END IF;
	paths := array_prepend(n.path, paths);
	names := array_prepend(n.name, names);
	kinds := array_prepend(n.kind, kinds);
	seqds := array_prepend(n.sequential, seqds);
	seqs := array_prepend(n.seq, seqs);
	tokens := array_prepend(n.token, tokens);
	owners := array_prepend(n.owner, owners);
	versions := array_prepend(n.version, versions);
	createds := array_prepend(n.created, createds);
END $$;

-- One trigger fire per change: the node's own watches and its dir's
-- 'kids' watches, under both paths' locks (shared; see fire), in one
-- scan of the watches.
CREATE FUNCTION S.fire2(p_path text, p_kinds text[], p_token bigint, p_dir text) RETURNS void LANGUAGE plpgsql
AS $$
DECLARE r record;
BEGIN
	PERFORM pg_advisory_xact_lock_shared(S.lockkey(p_path));
	PERFORM pg_advisory_xact_lock_shared(S.lockkey(p_dir));
	FOR r IN DELETE FROM S.watches WHERE path IN (p_path, p_dir)
			AND ((path = p_path AND kind = ANY (p_kinds) AND token IN (0, p_token)) OR (path = p_dir AND kind = 'kids'))
		RETURNING session, wid LOOP
		PERFORM pg_notify('CHAN_' || r.session, r.wid || ' ' || coalesce(current_setting('baton.by', true), ''));
	END LOOP;
END $$;

CREATE OR REPLACE FUNCTION S.nodes_changed() RETURNS trigger LANGUAGE plpgsql
AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM S.fire2(NEW.path, '{exists}', 0, NEW.dir);
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM S.fire2(OLD.path, '{gone,data}', OLD.token, OLD.dir);
	ELSIF NEW.version <> OLD.version THEN
		PERFORM S.fire(OLD.path, '{data}', OLD.token);
	END IF;
	RETURN NULL;
END $$;
`, `
-- Version 3: a listing steps over the index entries of deleted nodes
-- without reading them from the table, and autovacuum takes them away
-- sooner.
--
-- A dir's deleted nodes leave their entries in nodes_dir until a vacuum,
-- and a busy lock deletes a node at every release. A bitmap index scan,
-- the planner's choice for a dir it believes holds many rows, visits the
-- table for every such entry, every time (a listing over 8,000 of them
-- took 1.2 ms); a plain index scan marks the entries of rows dead to every
-- transaction as it meets them, and later scans skip them without a visit
-- to the table (0.18 ms over the same 8,000). So the listings run with
-- bitmap scans off (the SET clause, for their statement alone).
ALTER FUNCTION S.children(text) SET enable_bitmapscan = off;
ALTER FUNCTION S.watch(bigint, bigint, bigint, text, text, bigint, bigint) SET enable_bitmapscan = off;

-- relist is Relist's listing: children without the dir's key.
CREATE FUNCTION S.relist(p_dir text) RETURNS SETOF S.nodes LANGUAGE sql STABLE
SET enable_bitmapscan = off
AS $$ SELECT * FROM S.nodes WHERE dir = p_dir
	ORDER BY sequential DESC, CASE WHEN sequential THEN seq ELSE 0 END, name COLLATE "C" $$;

-- create_list lists through children (a procedure that commits may not
-- carry a SET clause itself).
CREATE OR REPLACE PROCEDURE S.create_list(p_session bigint, p_dir text, p_kind text, p_data bytea,
	p_ephemeral boolean, p_sequential boolean, p_attempt text,
	OUT paths text[], OUT names text[], OUT kinds text[], OUT seqds boolean[], OUT seqs bigint[],
	OUT tokens bigint[], OUT owners bigint[], OUT versions bigint[], OUT createds timestamptz[])
LANGUAGE plpgsql
AS $$
DECLARE n S.nodes;
BEGIN
	SELECT * INTO STRICT n FROM S.create_node(p_session, p_dir, p_kind, p_data, p_ephemeral, p_sequential, p_attempt);
	COMMIT;
	-- children takes the dir's key and checks the isolation level.
	SELECT array_agg(k.path), array_agg(k.name), array_agg(k.kind), array_agg(k.sequential), array_agg(k.seq),
		array_agg(k.token), array_agg(k.owner), array_agg(k.version), array_agg(k.created)
		INTO paths, names, kinds, seqds, seqs, tokens, owners, versions, createds
		FROM S.children(p_dir) k;
	IF NOT (n.path = ANY (coalesce(paths, '{}'))) AND NOT EXISTS (SELECT 1 FROM S.sessions WHERE id = p_session) THEN
		-- Gone with its session between the two transactions: as create
		-- says of a session that has expired.
		RAISE EXCEPTION 'baton: session % expired', p_session USING ERRCODE = 'BA001';
	END IF;
	paths := array_prepend(n.path, paths);
	names := array_prepend(n.name, names);
	kinds := array_prepend(n.kind, kinds);
	seqds := array_prepend(n.sequential, seqds);
	seqs := array_prepend(n.seq, seqs);
	tokens := array_prepend(n.token, tokens);
	owners := array_prepend(n.owner, owners);
	versions := array_prepend(n.version, versions);
	createds := array_prepend(n.created, createds);
END $$;

-- Vacuum the nodes of a busy lock after 1,000 deletes rather than after a
-- fifth of the table (a small table: 50 rows and a fifth). autovacuum
-- looks at a database once a minute (autovacuum_naptime) at most.
ALTER TABLE S.nodes SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
`}

// setup is run before the migrations, in the same transaction.
const setup = `
CREATE SCHEMA IF NOT EXISTS S;
CREATE TABLE IF NOT EXISTS S.migrations (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
);`

// expand puts the schema's name and channel prefix into sql.
func expand(schema, sql string) string {
	sql = strings.ReplaceAll(sql, "S.", schema+".")
	sql = strings.ReplaceAll(sql, "'S.' ||", "'"+schema+".' ||")
	sql = strings.ReplaceAll(sql, "CHAN_", channelPrefix(schema))
	return strings.ReplaceAll(sql, "CREATE SCHEMA IF NOT EXISTS S;", "CREATE SCHEMA IF NOT EXISTS "+schema+";")
}

// version reads the schema's version: 0 if it has no tables yet.
func version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+schema+".migrations").Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table, schema
		return 0, nil
	}
	return v, err
}

// migrate brings schema up to SchemaVersion in one transaction, under an
// advisory lock so that clients starting at once migrate it once.
func migrate(ctx context.Context, db *pgx.Conn, schema string) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		_ = tx.Rollback(rctx)
		cancel()
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "baton migrate "+schema); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, expand(schema, setup)); err != nil {
		return fmt.Errorf("%w %s: create: %w", ErrSchema, schema, err)
	}
	v, err := version(ctx, tx, schema)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w %s is at version %d, newer than this baton's %d", ErrSchema, schema, v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, expand(schema, migrations[v])); err != nil {
			return fmt.Errorf("%w %s: migration %d: %w", ErrSchema, schema, v+1, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+schema+".migrations (version) VALUES ($1)", v+1); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
