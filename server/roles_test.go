package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoles(t *testing.T) {
	t.Parallel()
	order := []Role{RoleViewer, RoleManager, RoleAdmin, RoleOperator}
	for i, r := range order {
		for j, need := range order {
			require.Equal(t, i >= j, r.AtLeast(need), "%s at least %s", r, need)
		}
		require.False(t, Role("root").AtLeast(r))
		require.False(t, Role("").AtLeast(r))
	}
	// A key stored before roles administers its tenant.
	require.Equal(t, RoleAdmin, APIKey{}.KeyRole())
	require.Equal(t, RoleViewer, APIKey{Role: RoleViewer}.KeyRole())

	r, err := ParseTenantRole("role", "")
	require.NoError(t, err)
	require.Equal(t, RoleAdmin, r)
	r, err = ParseTenantRole("role", "manager")
	require.NoError(t, err)
	require.Equal(t, RoleManager, r)
	for _, bad := range []string{"operator", "Admin", "root"} {
		_, err = ParseTenantRole("role", bad)
		require.Equal(t, EINVALID, ErrorCode(err), bad)
		require.Contains(t, err.Error(), "role", bad)
	}
}
