// Package etcdprobe asks etcd members about themselves.
package etcdprobe

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FirstStatus asks every endpoint for its status at once and returns the
// first answer, so that a member that is down or slow (a dial to it waits
// out ctx) costs nothing while another answers. When none answers, it
// returns each endpoint's error. It returns only once every request has
// ended.
func FirstStatus(ctx context.Context, cli *clientv3.Client, endpoints []string) (*clientv3.StatusResponse, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		st  *clientv3.StatusResponse
		err error
	}
	answers := make(chan answer, len(endpoints))
	for _, ep := range endpoints {
		go func() {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				err = fmt.Errorf("%s: %w", ep, err)
			}
			answers <- answer{st, err}
		}()
	}
	var first *clientv3.StatusResponse
	var errs []error
	for range endpoints {
		a := <-answers
		switch {
		case a.err == nil && first == nil:
			first = a.st
			cancel() // the others' answers are not needed
		case a.err != nil && first == nil:
			errs = append(errs, a.err)
		}
	}
	if first != nil {
		return first, nil
	}
	return nil, errors.Join(errs...)
}
