package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
)

// Every command and script this package sends goes through the Client
// methods below (or, for the connection hook and the hub's subscription,
// through MapError directly): MapError is the one place where Redis's
// refusals become baton.ErrPermission.

// MapError maps the error of a command or script run to baton's
// sentinels: a refusal by the user's ACL (NOPERM, or a script's "The
// user executing the script can't ..." for a command or key the script
// touches) or of its credentials (NOAUTH, WRONGPASS, e.g. after a
// password change) wraps baton.ErrPermission, keeping Redis's own words
// (and the original error, for errors.As and IsAuthError). Other errors
// are returned as they are.
//
// Every command baton's locks send is mapped so; use it on the errors of
// commands sent on Client.Redis() to recognise refusals the same way.
func MapError(err error) error {
	if err == nil || errors.Is(err, baton.ErrPermission) {
		return err
	}
	switch {
	case goredis.IsAuthError(err):
		return fmt.Errorf("not allowed (check the URL's user and password): %w: %w", baton.ErrPermission, err)
	case isACLRefusal(err):
		return fmt.Errorf("not allowed (check the Redis user's ACL: the lock's keys, the wake-up channel and the commands used): %w: %w", baton.ErrPermission, err)
	}
	return err
}

// isACLRefusal reports whether err is Redis refusing a command, key or
// channel to the connection's user: NOPERM, or the ERR a script gets
// when a command it calls is refused.
func isACLRefusal(err error) bool {
	if goredis.IsPermissionError(err) {
		return true
	}
	var re goredis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "The user executing the script can't")
}

// refused reports whether err is a refusal MapError mapped.
func refused(err error) bool { return errors.Is(err, baton.ErrPermission) }

// eval runs one of this package's scripts.
func (c *Client) eval(ctx context.Context, s *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	cmd := s.Run(ctx, c.rc, keys, args...)
	cmd.SetErr(MapError(cmd.Err()))
	return cmd
}

// setNX is SET key value NX PX ttl.
func (c *Client) setNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := c.rc.SetNX(ctx, key, value, ttl).Result()
	return ok, MapError(err)
}

// info is INFO server.
func (c *Client) info(ctx context.Context) (string, error) {
	s, err := c.rc.Info(ctx, "server").Result()
	return s, MapError(err)
}

// deleteIf deletes key if it holds value, without a script (for a user
// refused scripts): WATCH, GET, and DEL in MULTI/EXEC, which the server
// drops if the key changed since the WATCH. Best effort.
func (c *Client) deleteIf(ctx context.Context, key, value string) {
	_ = c.rc.Watch(ctx, func(tx *goredis.Tx) error {
		v, err := tx.Get(ctx, key).Result()
		if err != nil || v != value {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Del(ctx, key)
			return nil
		})
		return err
	}, key)
}
