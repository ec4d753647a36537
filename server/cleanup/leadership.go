package cleanup

import "context"

// Leadership tells which instance leads cleanup.
type Leadership interface {
	// InstanceID is this instance's id.
	InstanceID() string
	// IsLeader reports whether this instance leads now.
	IsLeader() bool
	// LeaderID is the leading instance's id as this instance sees it ("" if none).
	LeaderID(ctx context.Context) (string, error)
}

// Solo is the leadership of a single node (embedded mode): always the leader.
type Solo struct{ ID string }

func (s Solo) InstanceID() string                       { return s.ID }
func (s Solo) IsLeader() bool                           { return true }
func (s Solo) LeaderID(context.Context) (string, error) { return s.ID, nil }
