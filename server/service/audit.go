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

// Person is someone signed in through single sign-on (an OIDC issuer):
// the audit log names them by the issuer's subject and their email, not
// only by the actor string.
type Person struct {
	Issuer  string // the issuer's name in seatd's configuration
	Subject string // the token's sub: stable for the person at that issuer
	Email   string // may be empty
}

type personKey struct{}

// WithPerson returns ctx carrying p: every audit entry written under it
// adds actor.issuer, actor.subject and actor.email to its details.
func WithPerson(ctx context.Context, p Person) context.Context {
	return context.WithValue(ctx, personKey{}, p)
}

// audit records an admin action. The action already happened, so a failure
// to record it is logged rather than returned.
func (s *Service) audit(ctx context.Context, actor, tenantID, action, resource, id string, details map[string]string) {
	if p, ok := ctx.Value(personKey{}).(Person); ok {
		with := make(map[string]string, len(details)+3)
		for k, v := range details {
			with[k] = v
		}
		with["actor.issuer"], with["actor.subject"] = p.Issuer, p.Subject
		if p.Email != "" {
			with["actor.email"] = p.Email
		}
		details = with
	}
	err := s.store.AppendAudit(ctx, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: tenantID, Actor: actor, Action: action,
		Resource: resource, ResourceID: id, Details: details, At: s.now(),
	})
	if err != nil {
		s.log.ErrorContext(ctx, "audit entry not written", "action", action, "resource_id", id, "err", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
