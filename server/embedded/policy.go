package embedded

import (
	"context"

	"github.com/seatd/seatd/server"
)

// Site policies (server.PolicyStore): not kept yet.

var errPolicyNotBuilt = server.Errorf(server.EPRECONDITION, server.ReasonInvalidArgument, "site policies are not available in this build")

func (s *Store) SetPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	return server.License{}, errPolicyNotBuilt
}

func (s *Store) PutGroup(ctx context.Context, g server.Group) (server.Group, error) {
	return server.Group{}, errPolicyNotBuilt
}

func (s *Store) DeleteGroup(ctx context.Context, tenantID, name string) error { return errPolicyNotBuilt }

func (s *Store) ListGroups(ctx context.Context, tenantID string) ([]server.Group, error) {
	return nil, nil
}
