package grpcapi

import (
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// adminService serves AdminService: licenses (licenses.go), leases
// (leases.go), cleanup (cleanup.go), tenants and API keys (tenants.go).
// Every method is authenticated first (auth.go) and acts as that
// Principal.
type adminService struct {
	seatdv1.UnimplementedAdminServiceServer
	s *Server
}

var _ seatdv1.AdminServiceServer = (*adminService)(nil)
