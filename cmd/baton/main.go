// Command baton runs commands under distributed locks, elections and the
// other baton recipes on ZooKeeper, etcd or Redis, serves an embedded etcd,
// and demonstrates the whole system with `baton demo`.
package main

import (
	"context"
	"os"
)

func main() {
	m := NewMain()
	os.Exit(m.Exit(m.Run(context.Background(), os.Args[1:])))
}
