package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/record"
)

// Site policies (server.PolicyStore). The record keeps a license's policy
// on its row with the groups it names copied in (record/policy.go); every
// change of it, or of a group it names, bumps the license's settings
// version and is pushed to the live state, as a change of its grants is
// (grants.go): acquisitions judge by the policy of the license version
// Redis holds, in the same atomic step as the count.

// policyEnforced: acquisitions do not judge policies yet, so none is
// kept (issue 27's next step).
const policyEnforced = false

var errPolicyNotSupported = server.Errorf(server.EPRECONDITION, server.ReasonPolicyNotSupported,
	"site policies are not enforced by the distributed store yet: use the embedded store (--data-dir) for licenses that need one")

func (s *Store) SetPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	if !policyEnforced {
		return server.License{}, errPolicyNotSupported
	}
	return s.setPolicy(ctx, tenantID, licenseID, p)
}

// setPolicy writes the policy (record.SetPolicy), then pushes the new
// settings: the grants' pools first when the policy was switched on or off
// (they then revive no lapsed lease, or may again), then the license's.
func (s *Store) setPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	lic, pools, err := s.rec.SetPolicy(ctx, tenantID, licenseID, p)
	if err != nil {
		return server.License{}, err
	}
	for _, pool := range pools {
		s.pushConf(ctx, pool)
	}
	s.policyChanged(ctx, lic)
	return lic.License, nil
}

// policyChanged makes a license's new policy (or the new groups of its
// policy) the one every instance judges by, as grantsChanged does for its
// grants.
func (s *Store) policyChanged(ctx context.Context, lic record.LicenseRow) {
	s.licenseGrants.Drop(lic.ID)
	s.pushConf(ctx, lic)
}

// PutGroup stores the group and rewrites the policies naming it
// (record.PutGroup), then pushes each of those licenses' new settings.
func (s *Store) PutGroup(ctx context.Context, g server.Group) (server.Group, error) {
	if err := g.Validate("group"); err != nil {
		return server.Group{}, err
	}
	out, lics, err := s.rec.PutGroup(ctx, g)
	if err != nil {
		return server.Group{}, err
	}
	for _, lic := range lics {
		s.policyChanged(ctx, lic)
	}
	return out, nil
}

func (s *Store) DeleteGroup(ctx context.Context, tenantID, name string) error {
	return s.rec.DeleteGroup(ctx, tenantID, name)
}

func (s *Store) ListGroups(ctx context.Context, tenantID string) ([]server.Group, error) {
	return s.rec.ListGroups(ctx, tenantID)
}
