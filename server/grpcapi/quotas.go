package grpcapi

import (
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// quotasToProto shows the quotas a tenant is held to.
func quotasToProto(q Quotas) *seatdv1.TenantQuotas {
	return &seatdv1.TenantQuotas{MaxLicenses: q.Licenses, MaxSeats: q.Seats, MaxApiKeys: q.APIKeys}
}
