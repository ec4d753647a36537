package grpcapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestMatrixRowsNameMethods: every row of methodRoles is an AdminService
// method with a role (the calls themselves, every method × role ×
// transport: gateway's TestAuthorizationMatrix).
func TestMatrixRowsNameMethods(t *testing.T) {
	t.Parallel()
	methods := seatdv1.File_seatd_v1_admin_service_proto.Services().ByName("AdminService").Methods()
	for name, role := range methodRoles {
		require.NotNil(t, methods.ByName(protoreflect.Name(name)), "methodRoles names %s, which AdminService does not have", name)
		require.True(t, role.Valid(), name)
	}
	require.Len(t, methodRoles, methods.Len())
	_, ok := RoleFor("/seatd.v1.SeatService/AcquireSeat")
	require.False(t, ok)
	require.NoError(t, authorize(Principal{Role: server.RoleOperator, Operator: true}, adminPrefix+"CreateTenant"))
	require.Error(t, authorize(Principal{Role: server.RoleOperator, Operator: true}, adminPrefix+"NoSuchMethod"), "a method not in the matrix is refused to everyone")
	require.Error(t, authorize(Principal{Role: "root"}, adminPrefix+"GetLicense"), "an unknown role may do nothing")
}
