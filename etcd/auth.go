package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
)

// ErrAuthRequired is wrapped by Open's error when the server has
// authentication enabled and no credentials were given (WithAuth).
var ErrAuthRequired = errors.New("etcd: the server requires authentication (give a user and password)")

// authErrors are the server's answers about credentials and permissions.
var authErrors = []error{
	rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrPermissionDenied,
	rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrUserNotFound,
	rpctypes.ErrRoleNotGranted, rpctypes.ErrPermissionNotGranted, ErrAuthRequired,
}

// IsAuthError reports whether err (even wrapped) is an etcd
// authentication or permission error: wrong credentials, none, or a user
// not allowed to touch a key.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	// A raw gRPC status (from a call the client did not translate) is
	// translated first.
	conv := rpctypes.Error(err)
	for _, e := range authErrors {
		if errors.Is(err, e) || errors.Is(conv, e) {
			return true
		}
	}
	return false
}

// dialError explains a failed dial: wrong credentials say so. The
// message never contains the password.
func dialError(endpoints []string, user, password string, err error) error {
	who := ""
	if user != "" {
		who = " as user " + user
	}
	if IsAuthError(err) {
		err = fmt.Errorf("etcd: authentication to %v%s failed (check the user name and password): %w: %w", endpoints, who, baton.ErrPermission, err)
	} else {
		err = fmt.Errorf("etcd: dial %v%s: %w", endpoints, who, err)
	}
	return redact.Error(err, password)
}

// grantError explains a failed lease grant.
func grantError(err error) error {
	if IsAuthError(err) {
		return fmt.Errorf("etcd: grant lease: not allowed (check the user's credentials and roles): %w: %w", baton.ErrPermission, err)
	}
	if IsNoSpace(err) {
		return fmt.Errorf("etcd: grant lease: %s: %w", noSpaceHint, err)
	}
	return fmt.Errorf("etcd: grant lease: %w", err)
}

// checkAuth fails with ErrAuthRequired when the server has authentication
// enabled and the client has no credentials: without this, the session
// opens and the first write fails. A server that cannot say (before 3.5)
// passes.
func checkAuth(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	st, err := cli.AuthStatus(ctx)
	if err != nil {
		if IsAuthError(err) {
			return fmt.Errorf("%w: %w: %w", ErrAuthRequired, baton.ErrPermission, err)
		}
		return nil
	}
	if st.Enabled {
		return fmt.Errorf("%w: %w", ErrAuthRequired, baton.ErrPermission)
	}
	return nil
}

// authOff reports whether the server says its authentication is off.
// A server that cannot say (before 3.5, or an error) counts as on.
func authOff(ctx context.Context, cli *clientv3.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	st, err := cli.AuthStatus(ctx)
	return err == nil && !st.Enabled
}

// CredentialsIgnored reports whether s was opened (by Open, with
// WithAuth) on a server whose authentication is off: the server checked
// neither the user nor the password, and every client may do what s
// does. The command line warns about it.
func CredentialsIgnored(s *baton.Session) bool {
	c, ok := s.Conn().(*conn)
	return ok && c.credsIgnored
}
