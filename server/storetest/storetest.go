// Package storetest is the conformance suite every server.Store backend runs
// unchanged: the embedded store and the PostgreSQL+Redis store alike. Each
// test asserts one of the invariants listed in ARCHITECTURE.md.
package storetest

import (
	"testing"

	"github.com/seatd/seatd/server"
)

// Opener opens a store on one isolated data location. Calling it again after
// the previous store was closed reopens the same data (the persistence tests
// rely on that). The suite closes every store it opens.
type Opener func(t *testing.T) server.Store

// Backend makes a fresh, isolated data location (its own directory, database
// schema or key prefix), registers its removal with t.Cleanup, and returns
// an Opener for it.
type Backend func(t *testing.T) Opener
