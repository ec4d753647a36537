package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestAdminAnswersAreTrue: in both modes, an update of a license answers
// its live leases counted (REST PATCH, gRPC UpdateLicense, seatctl
// licenses update), and a revocation of a lease that has ended already is
// refused with the reason of its end (REST 400, gRPC FAILED_PRECONDITION,
// seatctl exit 6 saying so), nothing changed (issue 25: seatsInUse 0
// while three leases were live; a second revoke printed "revoked").
func TestAdminAnswersAreTrue(t *testing.T) {
	t.Parallel()
	bin := buildSeatctl(t)
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testAdminAnswers(t, bin, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testAdminAnswers(t, bin, b.startSeatd(t, "answers-"+randomHex(3)))
	})
}

func testAdminAnswers(t *testing.T, bin string, p *proc) {
	ctx := testContext(t)
	op := p.OperatorKey
	c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: op}
	// An hour's TTL: the leases stay live however slow the machine is.
	lic := newLicense(t, p, 5, time.Hour, "answers")
	var leases []*seatdv1.AcquireSeatResponse
	for _, fp := range []string{"a", "b", "c"} {
		l, err := p.acquire(ctx, lic.GetKey(), fp)
		require.NoError(t, err)
		leases = append(leases, l)
	}

	r := p.do(t, "PATCH", "/v1/admin/licenses/"+lic.GetId(), op, `{"seats":4}`).requireCode(t, http.StatusOK)
	require.EqualValues(t, 4, r.num(t, "seats"))
	require.EqualValues(t, 3, r.num(t, "seatsInUse"), "REST PATCH: the live leases")
	up, err := p.admin().UpdateLicense(p.asOperator(ctx), &seatdv1.UpdateLicenseRequest{
		License: &seatdv1.License{Id: lic.GetId(), Name: "answers 2"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
	})
	require.NoError(t, err)
	require.Equal(t, int32(3), up.GetLicense().GetSeatsInUse(), "gRPC UpdateLicense: the live leases")
	var upd seatdv1.License
	c.json(&upd, "licenses", "update", lic.GetId(), "--seats", "5")
	require.Equal(t, int32(3), upd.GetSeatsInUse(), "seatctl licenses update: the live leases")

	// Revoke: once, then again by each way in.
	revoked := leases[0].GetLease().GetId()
	c.ok("leases", "revoke", revoked)
	r = p.do(t, "POST", "/v1/admin/leases/"+revoked+":revoke", op, `{"reason":"again"}`).requireCode(t, http.StatusBadRequest)
	require.Equal(t, "LEASE_REVOKED", r.errorReason())
	require.Contains(t, r.str(t, "message"), "already revoked")
	_, err = p.admin().RevokeLease(p.asOperator(ctx), &seatdv1.RevokeLeaseRequest{LeaseId: revoked})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_REVOKED")
	require.Contains(t, c.fails(ctlRefused, "leases", "revoke", revoked), "already revoked")

	// A released lease: refused with LEASE_RELEASED, still released.
	_, err = p.release(ctx, leases[1])
	require.NoError(t, err)
	released := leases[1].GetLease().GetId()
	require.Contains(t, c.fails(ctlRefused, "leases", "revoke", released), "already released")
	_, err = p.admin().RevokeLease(p.asOperator(ctx), &seatdv1.RevokeLeaseRequest{LeaseId: released})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_RELEASED")
	got, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_REVOKED})
	require.NoError(t, err)
	require.Len(t, got.GetLeases(), 1, "only the first revocation ended a lease")
	require.Equal(t, revoked, got.GetLeases()[0].GetId())

	gl, err := p.admin().GetLicense(p.asOperator(ctx), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Equal(t, int32(1), gl.GetLicense().GetSeatsInUse(), "one lease left live")
}
