package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// errGrantsUnsupported stands until the store keeps feature grants.
var errGrantsUnsupported = server.Errorf(server.EPRECONDITION, server.ReasonFeatureNotLicensed, "feature grants are not supported by this store yet")

// CreateGrant is not supported yet.
func (s *Store) CreateGrant(context.Context, server.Grant) (server.Grant, error) {
	return server.Grant{}, errGrantsUnsupported
}

// UpdateGrant is not supported yet.
func (s *Store) UpdateGrant(context.Context, string, string, string, func(*server.Grant) error) (server.Grant, error) {
	return server.Grant{}, errGrantsUnsupported
}

// DeleteGrant is not supported yet.
func (s *Store) DeleteGrant(context.Context, string, string, string) (int, error) {
	return 0, errGrantsUnsupported
}
