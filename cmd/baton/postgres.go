package main

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/postgres"
)

const postgresInitSynopsis = "postgres init [--store postgres://…[?schema=S]]"

// postgres is `baton postgres init`: make or migrate baton's schema in the
// database at --store, for sites whose clients may not run DDL.
func (m *Main) postgres(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "init" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(m.Stdout, "usage: baton %s\n", postgresInitSynopsis)
			return nil
		}
		return usageErr("postgres: want postgres init")
	}
	var sf storeFlags
	fs := m.newFlags("postgres init", postgresInitSynopsis, &sf, false)
	pos, argv, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("postgres init: unexpected arguments")
	}
	u, err := sf.parse()
	if err != nil {
		return err
	}
	if u.Scheme != "postgres" {
		return usageErr("postgres init: --store must be postgres:// or postgresql://, not %s://", u.Scheme)
	}
	ctx, cancel := context.WithTimeout(ctx, sf.dial)
	defer cancel()
	_, schema, err := postgres.SplitSchema(u.Unredacted())
	if err != nil {
		return err
	}
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	v, err := postgres.Init(ctx, u.Unredacted())
	if err != nil {
		return fmt.Errorf("postgres init on %s: %w", u, redact.Error(err, u.Password))
	}
	fmt.Fprintf(m.Stdout, "schema %s at version %d on %s\n", schema, v, u)
	return nil
}
