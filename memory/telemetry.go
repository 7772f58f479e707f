package memory

import "github.com/batonhq/baton"

var _ baton.Backender = (*conn)(nil)

// Backend is "memory".
func (c *conn) Backend() string { return "memory" }
