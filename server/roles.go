package server

// Role is what a principal may do in its tenant. Each role may do what
// the roles below it may: a viewer reads licenses, leases and reports; a
// manager also revokes leases and edits site policies and groups; an
// admin also changes licenses, feature grants, API keys and signing keys.
// The operator stands above every tenant (tenants, the license file).
// Which role each admin call needs is one table, grpcapi's
// methodRoles.
type Role string

const (
	RoleViewer   Role = "viewer"
	RoleManager  Role = "manager"
	RoleAdmin    Role = "admin"
	RoleOperator Role = "operator"
)

// TenantRoles are the roles an API key or a tenant's signed-in person can
// hold, lowest first.
var TenantRoles = []Role{RoleViewer, RoleManager, RoleAdmin}

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleManager:
		return 2
	case RoleAdmin:
		return 3
	case RoleOperator:
		return 4
	}
	return 0
}

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r may do what need may (an unknown role may do
// nothing).
func (r Role) AtLeast(need Role) bool { return r.rank() > 0 && r.rank() >= need.rank() }

// ParseTenantRole reads an API key's role ("" is RoleAdmin, the rights of
// every key made before roles); the operator's is not a key's.
func ParseTenantRole(field, s string) (Role, error) {
	if s == "" {
		return RoleAdmin, nil
	}
	r := Role(s)
	if r.rank() == 0 || r == RoleOperator {
		return "", Invalid(field, "%q is not a role: viewer, manager or admin", s)
	}
	return r, nil
}

// KeyRole is the key's role: RoleAdmin for a key stored before roles.
func (k APIKey) KeyRole() Role {
	if k.Role == "" {
		return RoleAdmin
	}
	return k.Role
}
