package serve

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
)

// clusterMember is one line of a --cluster file.
type clusterMember struct{ name, peer, client string }

// readClusterFile reads a --cluster file: one member a line, NAME
// PEER-host:port CLIENT-host:port; blank lines and lines starting with #
// are skipped.
func readClusterFile(path string) ([]clusterMember, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []clusterMember
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: want NAME PEER-host:port CLIENT-host:port", line)
		}
		for _, a := range fields[1:] {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
		}
		ms = append(ms, clusterMember{fields[0], fields[1], fields[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no members")
	}
	return ms, nil
}

// normalizeInitial gives every member of an --initial-cluster value a
// peer URL with scheme, and returns the host:port of member name.
func normalizeInitial(s, scheme, name string) (norm, own string, err error) {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		n, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || n == "" || addr == "" {
			return "", "", fmt.Errorf("%q: want NAME=host:port", p)
		}
		hostPort := addr
		if i := strings.Index(addr, "://"); i >= 0 {
			if addr[:i] != scheme {
				return "", "", fmt.Errorf("%q: peer URLs here are %s:// (peer TLS is %s)", p, scheme, map[bool]string{true: "on", false: "off"}[scheme == "https"])
			}
			hostPort = addr[i+3:]
		}
		if _, _, err := net.SplitHostPort(hostPort); err != nil {
			return "", "", fmt.Errorf("%q: %v", p, err)
		}
		if n == name {
			own = hostPort
		}
		parts = append(parts, n+"="+scheme+"://"+hostPort)
	}
	return strings.Join(parts, ","), own, nil
}
