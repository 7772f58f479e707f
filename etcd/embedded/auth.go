package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// RootUser is the user (and role) authentication is turned on with.
const RootUser = "root"

// enableAuth turns on authentication with user root and password pw,
// through an in-process client of the started server (requests go through
// raft like any client's). On a data dir where it is already on, it checks
// that pw is root's password. Errors never contain pw.
func enableAuth(ctx context.Context, e *embed.Etcd, pw string) error {
	cli := v3client.New(e.Server)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	st, err := cli.AuthStatus(ctx)
	if err != nil {
		return fmt.Errorf("embedded: auth status: %w", err)
	}
	if st.Enabled {
		if _, err := cli.Authenticate(ctx, RootUser, pw); err != nil {
			return fmt.Errorf("embedded: authentication is on in this data dir and the root password given is not root's: %w", err)
		}
		return nil
	}
	// Each step tolerates a previous start that stopped half way.
	if _, err := cli.UserAdd(ctx, RootUser, pw); errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		_, err = cli.UserChangePassword(ctx, RootUser, pw)
		if err != nil {
			return fmt.Errorf("embedded: set root's password: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("embedded: add user root: %w", err)
	}
	if _, err := cli.RoleAdd(ctx, RootUser); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("embedded: add role root: %w", err)
	}
	if _, err := cli.UserGrantRole(ctx, RootUser, RootUser); err != nil {
		return fmt.Errorf("embedded: grant role root: %w", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("embedded: enable authentication: %w", err)
	}
	return nil
}

// AuthEnabled reports whether the running server has authentication on.
func (s *Server) AuthEnabled() bool {
	s.mu.Lock()
	e := s.etcd
	s.mu.Unlock()
	return e != nil && e.Server.AuthStore().IsAuthEnabled()
}
