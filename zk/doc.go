// Package zk is baton's backend on Apache ZooKeeper, built on
// github.com/go-zookeeper/zk. Open returns a session for the recipes.
//
// Nodes follow Apache Curator's layouts, so baton and Curator (and kazoo)
// share lock paths. Creates are exactly-once across lost replies, fencing
// tokens are czxids, and a session counts itself lost before the server
// can expire it. WithAuth with WithACL(CreatorACL...) keeps other
// identities from breaking a holder's lock; WithTLS uses the secure client
// port.
//
// The layouts, the loss rule and the security model are explained in
// docs/zk.md.
package zk
