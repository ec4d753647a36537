package service

import (
	"context"
	"strconv"

	"github.com/seatd/seatd/server"
)

// SystemActor names seatd itself in the audit log (e.g. revoking an
// unconfirmed waiter grant). Callers name everyone else (grpcapi's
// Principal.Actor).
const SystemActor = "system"

// audit records an admin action. The action already happened, so a failure
// to record it is logged rather than returned.
func (s *Service) audit(ctx context.Context, actor, tenantID, action, resource, id string, details map[string]string) {
	err := s.store.AppendAudit(ctx, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: tenantID, Actor: actor, Action: action,
		Resource: resource, ResourceID: id, Details: details, At: s.now(),
	})
	if err != nil {
		s.log.ErrorContext(ctx, "audit entry not written", "action", action, "resource_id", id, "err", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
