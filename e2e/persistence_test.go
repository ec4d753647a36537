package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestPersistenceAcrossRestart: a restart on the same data dir loses no
// license, lease, deadline (heartbeats are written behind and flushed on
// shutdown) or seat.
func TestPersistenceAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := start(t, options{dataDir: dir})
	ctx := testContext(t)
	op := first.asOperator(ctx)

	created, err := first.admin().CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "persistent", Seats: 2, LeaseTtl: durationpb.New(time.Minute), Metadata: map[string]string{"plan": "gold"},
	}})
	require.NoError(t, err)
	lic := created.GetLicense()

	a, err := first.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-a", User: "alice", Hostname: "host-a"})
	require.NoError(t, err)
	b, err := first.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-b"})
	require.NoError(t, err)
	// Heartbeat a strictly later than its acquisition, so that the new
	// deadline differs from the first one.
	time.Sleep(20 * time.Millisecond)
	hb, err := first.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
	require.NoError(t, err)
	aDeadline := hb.GetExpiresAt().AsTime()
	bDeadline := b.GetLease().GetExpiresAt().AsTime()
	require.True(t, aDeadline.After(a.GetLease().GetExpiresAt().AsTime()), "the heartbeat moved the deadline")

	first.stopOK()

	second := start(t, options{dataDir: dir})
	op = second.asOperator(ctx)
	got, err := second.admin().GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err, "the license survives a restart")
	require.Equal(t, lic.GetKey(), got.GetLicense().GetKey())
	require.EqualValues(t, 2, got.GetLicense().GetSeats())
	require.Equal(t, time.Minute, got.GetLicense().GetLeaseTtl().AsDuration())
	require.Equal(t, "persistent", got.GetLicense().GetName())
	require.Equal(t, map[string]string{"plan": "gold"}, got.GetLicense().GetMetadata())

	list, err := second.admin().ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Len(t, list.GetLeases(), 2)
	byID := map[string]*seatdv1.Lease{}
	for _, l := range list.GetLeases() {
		byID[l.GetId()] = l
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, l.GetState(), "lease %s after restart", l.GetId())
	}
	la, lb := byID[a.GetLease().GetId()], byID[b.GetLease().GetId()]
	require.NotNil(t, la)
	require.NotNil(t, lb)
	require.True(t, aDeadline.Equal(la.GetExpiresAt().AsTime()), "the heartbeated deadline was flushed on shutdown: want %s, got %s", aDeadline, la.GetExpiresAt().AsTime())
	require.True(t, bDeadline.Equal(lb.GetExpiresAt().AsTime()), "deadline of b: want %s, got %s", bDeadline, lb.GetExpiresAt().AsTime())
	require.Equal(t, "alice", la.GetUser())
	require.Equal(t, "host-a", la.GetHostname())

	// The seat count holds: the license is still full.
	_, err = second.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-c"})
	requireStatus(t, err, codes.ResourceExhausted, "SEATS_EXHAUSTED")

	// The old tokens still work.
	for _, l := range []*seatdv1.AcquireSeatResponse{a, b} {
		_, err := second.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
		require.NoError(t, err, "heartbeat lease %s with its token after restart", l.GetLease().GetId())
	}
	// And the fingerprint dedupe too: fp-a gets its lease back.
	again, err := second.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-a"})
	require.NoError(t, err)
	require.Equal(t, a.GetLease().GetId(), again.GetLease().GetId())

	// A release is durable too.
	_, err = second.seats().ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: b.GetLease().GetId(), LeaseToken: b.GetLeaseToken()})
	require.NoError(t, err)
	second.stopOK()

	third := start(t, options{dataDir: dir})
	list, err = third.admin().ListLeases(third.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	states := map[string]seatdv1.LeaseState{}
	for _, l := range list.GetLeases() {
		states[l.GetId()] = l.GetState()
	}
	require.Equal(t, map[string]seatdv1.LeaseState{
		a.GetLease().GetId(): seatdv1.LeaseState_LEASE_STATE_ACTIVE,
		b.GetLease().GetId(): seatdv1.LeaseState_LEASE_STATE_RELEASED,
	}, states)
	_, err = third.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-c"})
	require.NoError(t, err, "the released seat is free after a restart")
	third.stopOK()
}

// TestOperatorKeyGeneration: with no --operator-key seatd makes one on first
// start, keeps it (mode 0600), says once where it is without printing it
// (output lands in container logs: issue 24, item 14), and uses it after
// restarts.
func TestOperatorKeyGeneration(t *testing.T) {
	t.Parallel()
	const banner = "seatd generated an operator key"
	dir := t.TempDir()
	first := start(t, options{dataDir: dir, noOperatorKey: true})
	ctx := testContext(t)

	out := first.Output()
	require.Equal(t, 1, strings.Count(out, banner), "where the key is, said once:\n%s", out)
	m := generatedKeyRE.FindStringSubmatch(out)
	require.NotNil(t, m, "banner format:\n%s", out)
	keyFile := filepath.Join(dir, "operator.key")
	require.Equal(t, keyFile, m[1], "the banner tells where the key is kept")
	key := first.OperatorKey // read from that file by the harness
	require.GreaterOrEqual(t, len(key), 16)
	require.NotContains(t, out, key, "the key itself is printed nowhere")

	info, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "operator.key mode")
	data, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, key, strings.TrimSpace(string(data)))

	_, err = first.admin().CreateLicense(bearer(ctx, key), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Seats: 1, Name: "k"}})
	require.NoError(t, err, "the generated key works for admin calls")
	_, err = first.admin().ListLicenses(bearer(ctx, testOperatorKey), &seatdv1.ListLicensesRequest{})
	requireStatus(t, err, codes.Unauthenticated, "")
	first.stopOK()

	second := start(t, options{dataDir: dir, noOperatorKey: true})
	out = second.Output()
	require.NotContains(t, out, banner, "a restart does not print the key again")
	require.NotContains(t, out, key, "the key is not logged")
	list, err := second.admin().ListLicenses(bearer(ctx, key), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err, "the same key works after a restart")
	require.Len(t, list.GetLicenses(), 1)
	second.stopOK()
	data, err = os.ReadFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, key, strings.TrimSpace(string(data)), "the key file is unchanged")
}
