package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
)

// SplitSchema takes out schema= alone and hands every other parameter to
// pgx as written: libpq decodes %XX but not "+", so a space in options=
// must stay %20.
func TestSplitSchemaKeepsLibpqParameters(t *testing.T) {
	for _, c := range []struct{ in, rest, schema string }{
		{"postgres://h/db", "postgres://h/db", ""},
		{"postgres://h/db?schema=s", "postgres://h/db", "s"},
		{"postgres://h/db?options=-c%20search_path%3Dx&schema=s&sslmode=disable",
			"postgres://h/db?options=-c%20search_path%3Dx&sslmode=disable", "s"},
		{"postgresql://u:p%40w@h1:5432,h2:5433/db?target_session_attrs=read-write&application_name=a+b",
			"postgresql://u:p%40w@h1:5432,h2:5433/db?target_session_attrs=read-write&application_name=a+b", ""},
		{"postgres://app@%2Fvar%2Frun%2Fpostgresql:5433/db?schema=s", "postgres://app@%2Fvar%2Frun%2Fpostgresql:5433/db", "s"},
		{"host=h dbname=db schema=s sslmode=disable", "host=h dbname=db sslmode=disable", "s"},
	} {
		rest, schema, err := SplitSchema(c.in)
		if err != nil || rest != c.rest || schema != c.schema {
			t.Errorf("SplitSchema(%q) = %q, %q, %v; want %q, %q", c.in, rest, schema, err, c.rest, c.schema)
		}
	}
}

// A session opened with libpq's options= parameter runs its connections
// with them: the URL's options reach the server as the user wrote them.
func TestOpenPassesLibpqOptions(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := newSchema()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	app := "baton_opts_" + schema
	s, err := Open(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&options=-c%%20application_name%%3D%s&schema=%s",
		srv.Addr(), app, schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var n int
	if err := admin(t, srv).QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no connection of the session has application_name %s from the URL's options", app)
	}
}
