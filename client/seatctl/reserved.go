package seatctl

import (
	"context"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// seatUse is what `seatctl status` shows of a license's site policy for
// one of its pools, beside its seats in use: the seats its reservations
// keep and how many of those live leases hold (Lease.reserved_for), and
// its lingering seats.
//
// Lingering stays 0 for now: no lease lingers yet (the policy's linger is
// validated, not enforced; issue 27). The column is there so that a
// lingering seat, once there is one, shows apart from the seats in use.
type seatUse struct {
	Reserved  int32 // seats the pool's reserve rules keep (0: none)
	Taken     int32 // of them, held by live leases now
	Lingering int32
}

// policyUse is every license's seatUse by pool: "" the base pool, else a
// feature (a feature's reservations span all its grants).
type policyUse map[string]map[string]seatUse

// policyFanOut bounds the licenses whose policy is read at once.
const policyFanOut = 8

// reservation names one reserve rule as a lease's reserved_for does: the
// pool's feature and the subject, a host's name in lower case.
type reservation struct {
	feature string
	kind    seatdv1.PolicySubject_Kind
	name    string
}

func reservationOf(feature string, s *seatdv1.PolicySubject) reservation {
	name := s.GetName()
	if s.GetKind() == seatdv1.PolicySubject_KIND_HOST {
		name = strings.ToLower(name)
	}
	return reservation{feature: feature, kind: s.GetKind(), name: name}
}

// readPolicyUse reads each license's policy and, for those with
// reservations, its live leases, to count who holds the reserved seats.
// A seatd without site policies (Unimplemented) has none to show.
func readPolicyUse(ctx context.Context, admin seatdv1.AdminServiceClient, tenant string, licenses []*seatdv1.License) (policyUse, error) {
	var (
		mu  sync.Mutex
		out = policyUse{}
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(policyFanOut)
	for _, l := range licenses {
		g.Go(func() error {
			resp, err := admin.GetLicensePolicy(gctx, &seatdv1.GetLicensePolicyRequest{LicenseId: l.GetId(), TenantId: tenant})
			switch {
			case status.Code(err) == codes.Unimplemented || status.Code(err) == codes.NotFound:
				return nil // an older seatd; or a license deleted since it was listed
			case err != nil:
				return err
			}
			seats := map[reservation]int32{}
			for _, r := range resp.GetPolicy().GetRules() {
				if r.GetKind() == seatdv1.PolicyRule_KIND_RESERVE {
					seats[reservationOf(r.GetFeature(), r.GetSubject())] = r.GetCount()
				}
			}
			if len(seats) == 0 {
				return nil
			}
			held, err := reservedLeases(gctx, admin, tenant, l.GetId())
			if err != nil {
				return err
			}
			use := map[string]seatUse{}
			for r, n := range seats {
				u := use[r.feature]
				u.Reserved += n
				u.Taken += min(held[r], n) // as the server judges: a rule's count lowered below its holders keeps none free
				use[r.feature] = u
			}
			mu.Lock()
			out[l.GetId()] = use
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// reservedLeases counts the license's live leases by the reservation
// whose seat each holds. A lease keeps the seat of a reservation the
// policy has since dropped; it counts for none of the rules now.
func reservedLeases(ctx context.Context, admin seatdv1.AdminServiceClient, tenant, licenseID string) (map[reservation]int32, error) {
	held := map[reservation]int32{}
	token := ""
	for {
		resp, err := admin.ListLeases(ctx, &seatdv1.ListLeasesRequest{
			LicenseId: licenseID, TenantId: tenant, State: seatdv1.LeaseState_LEASE_STATE_ACTIVE, PageSize: pageSize, PageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, l := range resp.GetLeases() {
			if l.GetReservedFor() != nil && l.GetState() == seatdv1.LeaseState_LEASE_STATE_ACTIVE {
				held[reservationOf(l.GetFeature(), l.GetReservedFor())]++
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			return held, nil
		}
	}
}
