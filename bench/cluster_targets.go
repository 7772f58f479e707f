package main

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// waitP99ms is a result's wait p99 in ms.
var waitP99ms = ptr(func(r bench.Result) *float64 { return r.WaitP99 }, 1e-3)

// writeClusterTargets writes the Redis Cluster table (issue 29): 100
// independent names over the cluster's slots, 4 clients each, baton
// against redsync on the same cluster in interleaved rounds.
func writeClusterTargets(b *strings.Builder, rs []bench.Result) {
	const st = "redis-cluster"
	bA := figure(rs, "baton", st, "many", 4, acqPerS)
	qA := figure(rs, "redsync", st, "many", 4, acqPerS)
	if bA.n == 0 && qA.n == 0 {
		return
	}
	fmt.Fprintf(b, "## Redis Cluster (issue 29)\n\n")
	fmt.Fprintf(b, "Three masters with a replica each (`redis-cli --cluster create --cluster-replicas 1`, cluster-node-timeout 2 s); ")
	fmt.Fprintf(b, "100 independent names spread over the slots, each contended by one handle from each of 4 clients (a `redis.Client` each for baton, one ClusterClient each for redsync). ")
	fmt.Fprintf(b, "Medians of the interleaved runs (baton, redsync, baton, …) with their range. ")
	fmt.Fprintf(b, "No server request counts: a replica counts the commands it replays as its own.\n\n")
	fmt.Fprintf(b, "| figure | baton | redsync | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(b, "| acquisitions/s | %s | %s | %s |\n", bA, qA, ratioStr(bA, qA))
	bW, qW := figure(rs, "baton", st, "many", 4, waitP99ms), figure(rs, "redsync", st, "many", 4, waitP99ms)
	fmt.Fprintf(b, "| wait p99, ms | %s | %s | %s |\n", bW, qW, ratioStr(bW, qW))
	fmt.Fprintf(b, "\n")
}
