package memory

import (
	"github.com/batonhq/baton/backend"
)

var _ backend.Backender = (*conn)(nil)

// Backend is "memory".
func (c *conn) Backend() string { return "memory" }
