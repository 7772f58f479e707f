// Package obstest checks baton's telemetry with the OpenTelemetry SDK:
// metrics through a manual reader, spans through the in-memory exporter,
// on every store (memory, ZooKeeper, etcd and Redis, real servers on
// loopback). It holds tests only.
package obstest
