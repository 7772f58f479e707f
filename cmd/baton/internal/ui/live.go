package ui

import "github.com/batonhq/baton/internal/store"

// How changes reach the page, shown on it: the store's watches on
// ZooKeeper and etcd; on Redis keyspace notifications when every server
// publishes them, else a read every 500 ms (store.Inspector.Live).
const (
	LiveWatches       = store.LiveWatches
	LiveNotifications = store.LiveNotifications
	LivePolling       = store.LivePolling
)
