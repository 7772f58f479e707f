// Package fourletter asks a ZooKeeper server one of its four-letter words
// (ruok, srvr, mntr, wchs, conf, …) on its client port.
package fourletter

import (
	"context"
	"io"
	"net"
)

// Ask sends cmd to the server at addr (host:port) and returns its answer,
// bounded by ctx. The server answers and closes the connection; an answer
// cut short by an error is returned as far as it came.
func Ask(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}
