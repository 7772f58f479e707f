// Package freeport finds free loopback TCP ports for the servers tests
// and benchmarks start. A port is free when asked: another process may
// take it before the server binds it, and the server then fails to start.
package freeport

import (
	"fmt"
	"net"
	"strconv"
)

// Ports returns n distinct TCP ports on 127.0.0.1 that nothing listens on.
func Ports(n int) ([]int, error) {
	// Each listener stays open until all are found, so that the kernel
	// hands out n different ports.
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("freeport: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Port returns one free TCP port on 127.0.0.1.
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// Addr returns "127.0.0.1:PORT" for a free port.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}
