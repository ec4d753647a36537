package grpcapi

import (
	"strings"

	"github.com/seatd/seatd/server"
)

// methodRoles is the authorization matrix: the least role each admin call
// needs, the one place that says who may do what (a role may do what the
// roles below it may: server.Role). The interceptor checks it before any
// handler runs; a method missing here is refused to everyone, the operator
// too, and TestAuthorizationMatrix fails until it has a row. Tenant
// scoping (a key or person works in its own tenant only) is the
// handlers' (Principal.tenant).
var methodRoles = map[string]server.Role{
	// viewer: read licenses, leases, reports
	"GetLicense":        server.RoleViewer,
	"ListLicenses":      server.RoleViewer,
	"GetLicensePolicy":  server.RoleViewer,
	"ListGroups":        server.RoleViewer,
	"ListLeases":        server.RoleViewer,
	"GetZombieReport":   server.RoleViewer,
	"GetUsageReport":    server.RoleViewer,
	"ListUsageEvents":   server.RoleViewer,
	"ListCleanupEvents": server.RoleViewer,
	"ListSigningKeys":   server.RoleViewer, // public keys: the JWKS serves them to anyone
	"GetLicenseFile":    server.RoleViewer, // locked mode's file in force: what the site may use

	// manager: + revoke leases, edit site policies and groups
	"RevokeLease":      server.RoleManager,
	"SetLicensePolicy": server.RoleManager,
	"PutGroup":         server.RoleManager,
	"DeleteGroup":      server.RoleManager,

	// admin: + licenses, feature grants, API keys, signing keys, the audit log
	"CreateLicense":      server.RoleAdmin,
	"UpdateLicense":      server.RoleAdmin,
	"DeleteLicense":      server.RoleAdmin,
	"CreateFeatureGrant": server.RoleAdmin,
	"UpdateFeatureGrant": server.RoleAdmin,
	"DeleteFeatureGrant": server.RoleAdmin,
	"CreateApiKey":       server.RoleAdmin,
	"ListApiKeys":        server.RoleAdmin,
	"RevokeApiKey":       server.RoleAdmin,
	"RotateSigningKey":   server.RoleAdmin,
	"ListAuditEvents":    server.RoleAdmin, // names people (subject, email)
	// webhooks: their URLs and delivery logs are an admin's (a secret is
	// answered once, at creation and rotation)
	"CreateWebhookEndpoint":      server.RoleAdmin,
	"ListWebhookEndpoints":       server.RoleAdmin,
	"GetWebhookEndpoint":         server.RoleAdmin,
	"DeleteWebhookEndpoint":      server.RoleAdmin,
	"SetWebhookEndpointDisabled": server.RoleAdmin,
	"RotateWebhookSecret":        server.RoleAdmin,
	"ListWebhookDeliveries":      server.RoleAdmin,
	"ReplayWebhookDelivery":      server.RoleAdmin,

	// the operator: above tenants. A cleanup pass and its status span every
	// tenant (its counts are other tenants' leases too), as do tenants and
	// locked mode's reload and signed usage export.
	"Cleanup":           server.RoleOperator,
	"GetCleanupStatus":  server.RoleOperator,
	"CreateTenant":      server.RoleOperator,
	"ListTenants":       server.RoleOperator,
	"ReloadLicenseFile": server.RoleOperator,
	"ExportUsage":       server.RoleOperator,
}

// RoleFor is the least role an admin method (its full gRPC name) needs;
// false for a method the matrix does not name.
func RoleFor(fullMethod string) (server.Role, bool) {
	name, ok := strings.CutPrefix(fullMethod, adminPrefix)
	if !ok {
		return "", false
	}
	r, ok := methodRoles[name]
	return r, ok
}

// authorize refuses p a method its role does not reach.
func authorize(p Principal, fullMethod string) error {
	need, ok := RoleFor(fullMethod)
	if !ok {
		return server.Errorf(server.EPERMISSION, server.ReasonPermissionDenied, "no role may call this method")
	}
	if !p.Role.AtLeast(need) {
		if need == server.RoleOperator {
			return server.Errorf(server.EPERMISSION, server.ReasonPermissionDenied, "only the operator may do this")
		}
		return server.Errorf(server.EPERMISSION, server.ReasonPermissionDenied, "the %s role may not do this: it needs %s", p.Role, need)
	}
	return nil
}
