package main

import (
	"context"
	"errors"
)

var errNotYet = errors.New("not available in this build yet")

func (m *Main) demo(ctx context.Context, args []string) error   { return errNotYet }
func (m *Main) worker(ctx context.Context, args []string) error { return errNotYet }
