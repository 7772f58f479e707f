// Package etcdhook lets tests outside package etcd reach the fault hooks
// its sessions carry. The etcd tests that need a server live in a module
// of their own (tests/etcd), so that the library's go.mod does not require
// the etcd server; package etcd sets these hooks when it loads.
package etcdhook

import "github.com/batonhq/baton"

// DropCreateReply makes the next create on s, a session of package etcd,
// reach the server and then lose its reply, as if the connection broke
// just after the server applied it.
var DropCreateReply func(s *baton.Session)
