package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/store"
)

// PrintMembers writes to w the table of the members of the etcd cluster at
// u, and its leader, as `baton serve members` prints it; ctx bounds the
// dial.
func PrintMembers(ctx context.Context, w io.Writer, u store.URL, tc *tls.Config) error {
	ms, err := embedded.ListMembers(ctx, endpoints(u), tc, u.User, u.Password)
	if err != nil {
		if why := dialProbe(u.Hosts); why != nil && errors.Is(err, context.DeadlineExceeded) {
			// The client says only that its deadline passed: name why,
			// as the other commands do.
			err = fmt.Errorf("%w (last connection error: %v)", err, why)
		}
		return fmt.Errorf("serve members: %s: %w", u.String(), err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tPEER URLS\tCLIENT URLS\tLEADER")
	for _, mb := range ms {
		lead := ""
		if mb.Leader {
			lead = "leader"
		}
		name := mb.Name
		if name == "" {
			name = "(not started)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, mb.ID, strings.Join(mb.PeerURLs, ","), strings.Join(mb.ClientURLs, ","), lead)
	}
	return tw.Flush()
}

// dialProbe dials each host once (briefly) and returns the last failure,
// or nil if every one answered.
func dialProbe(hosts []string) error {
	var last error
	for _, h := range hosts {
		c, err := net.DialTimeout("tcp", h, 500*time.Millisecond)
		if err != nil {
			last = err
			continue
		}
		c.Close()
	}
	return last
}
