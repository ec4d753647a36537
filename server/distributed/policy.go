package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// Site policies (server.PolicyStore) are not kept by the distributed store
// yet: judging them in acquire.lua's atomic step, with per-identity counts
// that survive a Redis loss, is issue 27's next step. Until then every
// call that would set one is refused, never accepted and left unenforced.

var errPolicyNotSupported = server.Errorf(server.EPRECONDITION, server.ReasonPolicyNotSupported,
	"site policies are not enforced by the distributed store yet: use the embedded store (--data-dir) for licenses that need one")

func (s *Store) SetPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	return server.License{}, errPolicyNotSupported
}

func (s *Store) PutGroup(ctx context.Context, g server.Group) (server.Group, error) {
	return server.Group{}, errPolicyNotSupported
}

func (s *Store) DeleteGroup(ctx context.Context, tenantID, name string) error {
	return errPolicyNotSupported
}

// ListGroups: the distributed store keeps no groups (none can be put).
func (s *Store) ListGroups(ctx context.Context, tenantID string) ([]server.Group, error) {
	return nil, nil
}
