package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

func TestLicenseSeatsInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	idle := e.license(t, 1, time.Minute)
	e.acquire(t, lic.GetKey(), "a")
	e.acquire(t, lic.GetKey(), "b")
	b := e.acquire(t, lic.GetKey(), "c")
	_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: b.GetLease().GetId(), LeaseToken: b.GetLeaseToken()})
	require.NoError(t, err)

	got, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.EqualValues(t, 2, got.GetLicense().GetSeatsInUse())

	list, err := e.admin.ListLicenses(operator(t), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	inUse := map[string]int32{}
	for _, l := range list.GetLicenses() {
		inUse[l.GetId()] = l.GetSeatsInUse()
	}
	require.Equal(t, map[string]int32{lic.GetId(): 2, idle.GetId(): 0}, inUse)
}

func TestEventLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 2, time.Minute)
	other := e.license(t, 2, time.Minute)
	for _, l := range []*seatdv1.License{lic, other, lic} {
		a := e.acquire(t, l.GetKey(), "fp-"+l.GetId())
		_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
		require.NoError(t, err)
	}
	ctx := operator(t)

	all, err := e.admin.ListUsageEvents(ctx, &seatdv1.ListUsageEventsRequest{})
	require.NoError(t, err)
	require.Len(t, all.GetUsageEvents(), 3)
	for _, ev := range all.GetUsageEvents() {
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_RELEASED, ev.GetEndState())
		require.Equal(t, ev.GetEndedAt().AsTime().Sub(ev.GetStartedAt().AsTime()), ev.GetDuration().AsDuration())
	}
	page, err := e.admin.ListUsageEvents(ctx, &seatdv1.ListUsageEventsRequest{LicenseId: other.GetId(), PageSize: 1})
	require.NoError(t, err)
	require.Len(t, page.GetUsageEvents(), 1)
	require.Equal(t, other.GetId(), page.GetUsageEvents()[0].GetLicenseId())
	require.Empty(t, page.GetNextPageToken())

	audit, err := e.admin.ListAuditEvents(ctx, &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, audit.GetAuditEvents())
	require.Equal(t, "license.create", audit.GetAuditEvents()[0].GetAction())

	cleaned, err := e.admin.ListCleanupEvents(ctx, &seatdv1.ListCleanupEventsRequest{})
	require.NoError(t, err)
	require.Empty(t, cleaned.GetCleanupEvents())

	now := timestamppb.Now()
	_, err = e.admin.ListUsageEvents(ctx, &seatdv1.ListUsageEventsRequest{StartTime: now, EndTime: now})
	requireInvalid(t, err, "start_time")
	_, err = e.admin.ListAuditEvents(ctx, &seatdv1.ListAuditEventsRequest{PageSize: 1001})
	requireInvalid(t, err, "page_size")
	_, err = e.admin.ListCleanupEvents(ctx, &seatdv1.ListCleanupEventsRequest{EndTime: &timestamppb.Timestamp{Nanos: -1}})
	requireInvalid(t, err, "end_time")
	_, err = e.admin.ListUsageEvents(ctx, &seatdv1.ListUsageEventsRequest{PageToken: "junk"})
	requireInvalid(t, err, "page_token")
}

func TestGetUsageReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	a := e.acquire(t, lic.GetKey(), "a")
	for range 2 {
		_, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "b"})
		requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted)
	}
	_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
	require.NoError(t, err)

	ctx := operator(t)
	rep, err := e.admin.GetUsageReport(ctx, &seatdv1.GetUsageReportRequest{Bucket: seatdv1.UsageBucket_USAGE_BUCKET_HOUR})
	require.NoError(t, err)
	require.Equal(t, seatdv1.UsageBucket_USAGE_BUCKET_HOUR, rep.GetBucket())
	span := rep.GetEndTime().AsTime().Sub(rep.GetStartTime().AsTime())
	require.True(t, span == 7*24*time.Hour || span == 7*24*time.Hour+time.Hour, "7 days, widened to whole hours: %v", span)
	var denials, acquisitions int64
	peak := int32(0)
	byReason := map[string]int64{}
	for _, r := range rep.GetRows() {
		require.Equal(t, lic.GetId(), r.GetLicenseId())
		denials += r.GetDenials()
		for reason, n := range r.GetDenialsByReason() {
			byReason[reason] += n
		}
		acquisitions += r.GetAcquisitions()
		peak = max(peak, r.GetPeakSeats())
	}
	require.Equal(t, int64(2), denials)
	require.Equal(t, map[string]int64{server.ReasonSeatsExhausted: 2}, byReason, "denials by reason sum to denials")
	require.Equal(t, int64(1), acquisitions)
	require.Equal(t, int32(1), peak)
	require.Len(t, rep.GetUsers(), 1)
	require.Equal(t, "a", rep.GetUsers()[0].GetUser())

	_, err = e.admin.GetUsageReport(ctx, &seatdv1.GetUsageReportRequest{Bucket: 9})
	requireInvalid(t, err, "bucket")
	_, err = e.admin.GetUsageReport(ctx, &seatdv1.GetUsageReportRequest{UserLimit: 5000})
	requireInvalid(t, err, "user_limit")
	_, err = e.admin.GetUsageReport(ctx, &seatdv1.GetUsageReportRequest{StartTime: timestamppb.New(time.Now().Add(-200 * 24 * time.Hour)),
		Bucket: seatdv1.UsageBucket_USAGE_BUCKET_HOUR})
	requireInvalid(t, err, "start_time")
	_, err = e.admin.GetUsageReport(ctx, &seatdv1.GetUsageReportRequest{LicenseId: "lic_000000000000000000000000"})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
}
