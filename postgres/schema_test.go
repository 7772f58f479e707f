package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/pgtest"
)

// A schema at version 1 (its watches logged, its creates serialised) is
// migrated by the first Open to the current version: the watches table
// unlogged, the listings without bitmap scans, autovacuum sooner on the
// nodes, and nodes queued and handed on in it.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := newSchema()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := admin(t, srv)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{expand(schema, setup), expand(schema, migrations[0]),
		"INSERT INTO " + schema + ".migrations (version) VALUES (1)"} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	persistence := func() string {
		var p string
		if err := db.QueryRow(ctx, "SELECT relpersistence::text FROM pg_class WHERE oid = $1::regclass", schema+".watches").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := persistence(); p != "p" {
		t.Fatalf("version 1's watches: relpersistence %q, want p", p)
	}
	url := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", srv.Addr(), schema)
	s1, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close(ctx)
	v, err := version(ctx, db, schema)
	if err != nil || v != SchemaVersion {
		t.Fatalf("version after Open: %d, %v; want %d", v, err, SchemaVersion)
	}
	if p := persistence(); p != "u" {
		t.Fatalf("watches after the migration: relpersistence %q, want u (unlogged)", p)
	}
	// Version 3: the listings without bitmap scans, and autovacuum sooner.
	var opts, conf string
	if err := db.QueryRow(ctx, "SELECT array_to_string(reloptions, ','), (SELECT array_to_string(proconfig, ',') FROM pg_proc WHERE oid = $2::regproc) FROM pg_class WHERE oid = $1::regclass",
		schema+".nodes", schema+".relist").Scan(&opts, &conf); err != nil {
		t.Fatal(err)
	}
	if opts != "autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=1000" || conf != "enable_bitmapscan=off" {
		t.Fatalf("after the migration: nodes' options %q, relist's settings %q", opts, conf)
	}
	s2, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	const dir = "/migrated"
	a, kids, err := s1.Conn().(backend.CreateLister).CreateAndList(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil || len(kids) != 1 || kids[0].Path != a.Path || kids[0].Token != a.Token {
		t.Fatalf("CreateAndList: %+v, %+v, %v; want itself alone", a, kids, err)
	}
	b, kids, err := s2.Conn().(backend.CreateLister).CreateAndList(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil || len(kids) != 2 || kids[0].Path != a.Path || kids[1].Path != b.Path || b.Token <= a.Token {
		t.Fatalf("second CreateAndList: %+v, %+v, %v; want the first then itself", b, kids, err)
	}
	done := make(chan error, 1)
	go func() { done <- s2.Conn().WaitGone(ctx, a) }()
	if err := s1.Conn().Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitGone of the first after its delete: %v", err)
	}
}
