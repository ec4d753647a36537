package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestAcceptanceWalkthroughGRPC is the acceptance walk-through over
// gRPC: limit, retry dedupe, expiry without cleanup, strict expiry, then
// cleanup records the zombies.
func TestAcceptanceWalkthroughGRPC(t *testing.T) {
	t.Parallel()
	// Long enough that the four acquisitions below fit in one TTL on a
	// loaded machine (a race-built server beside other e2e tests): with
	// 2 s, a1 once lapsed before b was granted; 6 s left a load of 40 a
	// few seconds. The test waits one TTL out, once.
	const ttl = 15 * time.Second
	p := start(t, options{}) // --cleanup-interval 1h: no scheduled pass runs
	ctx := testContext(t)
	admin, seats, hb := p.admin(), p.seats(), p.heartbeats()
	op := p.asOperator(ctx)

	created, err := admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "walk-through", Seats: 2, LeaseTtl: durationpb.New(ttl),
	}})
	require.NoError(t, err)
	lic := created.GetLicense()
	require.NotEmpty(t, lic.GetId())
	require.NotEmpty(t, lic.GetKey())
	require.EqualValues(t, 2, lic.GetSeats())
	require.Equal(t, ttl, lic.GetLeaseTtl().AsDuration())
	require.True(t, lic.GetActive(), "a new license is active by default")
	require.Equal(t, "default", lic.GetTenantId())

	acquire := func(fp string) (*seatdv1.AcquireSeatResponse, error) {
		return seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: fp})
	}

	a1, err := acquire("fp-a")
	require.NoError(t, err)
	require.NotEmpty(t, a1.GetLease().GetId())
	require.NotEmpty(t, a1.GetLeaseToken())
	require.EqualValues(t, 1, a1.GetSeatsInUse())
	require.EqualValues(t, 2, a1.GetSeatLimit())
	require.Equal(t, ttl/6, a1.GetHeartbeatInterval().AsDuration(), "heartbeat interval is TTL/6")
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, a1.GetLease().GetState())
	require.Equal(t, lic.GetId(), a1.GetLease().GetLicenseId())

	b, err := acquire("fp-b")
	require.NoError(t, err)
	require.NotEqual(t, a1.GetLease().GetId(), b.GetLease().GetId())
	require.EqualValues(t, 2, b.GetSeatsInUse())

	_, err = acquire("fp-c")
	st := requireStatus(t, err, codes.ResourceExhausted, "SEATS_EXHAUSTED")
	info := errorInfo(st)
	require.Equal(t, "2", info.GetMetadata()["seats_in_use"], "ErrorInfo metadata: %v", info.GetMetadata())
	require.Equal(t, "2", info.GetMetadata()["seat_limit"], "ErrorInfo metadata: %v", info.GetMetadata())

	// A retry by the same client gets its lease back, not a second seat.
	a2, err := acquire("fp-a")
	require.NoError(t, err)
	require.Equal(t, a1.GetLease().GetId(), a2.GetLease().GetId(), "same fingerprint, same lease")
	require.EqualValues(t, 2, a2.GetSeatsInUse())
	require.NotEqual(t, a1.GetLeaseToken(), a2.GetLeaseToken(), "a repeated acquisition issues a new token")
	_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: a1.GetLease().GetId(), LeaseToken: a1.GetLeaseToken()})
	requireStatus(t, err, codes.PermissionDenied, "LEASE_TOKEN_INVALID")

	// No heartbeats: wait until both deadlines have passed.
	deadline := a2.GetLease().GetExpiresAt().AsTime()
	if bd := b.GetLease().GetExpiresAt().AsTime(); bd.After(deadline) {
		deadline = bd
	}
	require.WithinDuration(t, time.Now().Add(ttl), deadline, ttl, "deadline is about one TTL ahead")
	time.Sleep(time.Until(deadline) + 300*time.Millisecond)

	// Expired seats never block: new clients get both seats at once, and no
	// cleanup pass has run since the leases were taken (seatd runs one pass
	// when it starts; the next is an hour away).
	noCleanupSinceAcquire := func() {
		t.Helper()
		status, err := admin.GetCleanupStatus(op, &seatdv1.GetCleanupStatusRequest{})
		require.NoError(t, err)
		if run := status.GetLastRun(); run != nil {
			require.True(t, run.GetStartedAt().AsTime().Before(a1.GetLease().GetAcquiredAt().AsTime()),
				"a cleanup pass ran after the leases were taken: %v", run)
			require.Zero(t, run.GetExpired())
		}
	}
	noCleanupSinceAcquire()
	c, err := acquire("fp-c")
	require.NoError(t, err, "a seat past its deadline must not block, cleanup or not")
	require.EqualValues(t, 1, c.GetSeatsInUse())
	noCleanupSinceAcquire()

	// c took the seat of the lapsed lease with the earlier deadline (b: a
	// was handed back later). Observed ends are final: the grant recorded
	// that lease expired. The other is past its deadline and shows as
	// expired, but nothing has ended it yet.
	taken, lapsed := b, a2
	if a2.GetLease().GetExpiresAt().AsTime().Before(b.GetLease().GetExpiresAt().AsTime()) {
		taken, lapsed = a2, b
	}
	before, err := admin.ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	seen := 0
	for _, l := range before.GetLeases() {
		switch l.GetId() {
		case taken.GetLease().GetId():
			seen++
			require.Equal(t, seatdv1.LeaseState_LEASE_STATE_EXPIRED, l.GetState())
			require.NotNil(t, l.GetEndedAt(), "the lease whose seat went to c ended with that grant")
		case lapsed.GetLease().GetId():
			seen++
			require.Equal(t, seatdv1.LeaseState_LEASE_STATE_EXPIRED, l.GetState(), "a lease past its deadline shows as expired")
			require.Nil(t, l.GetEndedAt(), "no cleanup has ended lease %s yet", l.GetId())
		}
	}
	require.Equal(t, 2, seen, "leases: %v", before.GetLeases())

	// Strict expiry: a heartbeat after the deadline fails with LEASE_EXPIRED.
	_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: taken.GetLease().GetId(), LeaseToken: taken.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_EXPIRED")

	// Cleanup records the other zombie.
	run, err := admin.Cleanup(op, &seatdv1.CleanupRequest{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, run.GetRun().GetExpired(), int64(1), "cleanup run: %v", run.GetRun())
	require.Equal(t, "ok", run.GetRun().GetResult())
	require.Equal(t, "manual", run.GetRun().GetTrigger())
	_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: lapsed.GetLease().GetId(), LeaseToken: lapsed.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_EXPIRED")
	d, err := acquire("fp-d")
	require.NoError(t, err, "both expired seats are free")
	require.EqualValues(t, 2, d.GetSeatsInUse())
	status, err := admin.GetCleanupStatus(op, &seatdv1.GetCleanupStatusRequest{})
	require.NoError(t, err)
	require.Equal(t, "manual", status.GetLastRun().GetTrigger())
	require.True(t, status.GetIsLeader())

	list, err := admin.ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	byID := map[string]*seatdv1.Lease{}
	for _, l := range list.GetLeases() {
		byID[l.GetId()] = l
	}
	require.Len(t, byID, 4, "leases: %v", list.GetLeases())
	for _, id := range []string{a2.GetLease().GetId(), b.GetLease().GetId()} {
		l := byID[id]
		require.NotNil(t, l, "lease %s listed", id)
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_EXPIRED, l.GetState(), "lease %s", id)
		require.NotNil(t, l.GetEndedAt(), "an expired lease has ended_at")
	}
	expired, err := admin.ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_EXPIRED})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(expired.GetLeases()), 2)
	for _, l := range expired.GetLeases() {
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_EXPIRED, l.GetState())
	}

	// Still strictly expired after cleanup.
	_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: b.GetLease().GetId(), LeaseToken: b.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_EXPIRED")

	report, err := admin.GetZombieReport(op, &seatdv1.GetZombieReportRequest{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, report.GetZombiesTotal(), int64(2), "report: %v", report)
	require.NotEmpty(t, report.GetDays(), "zombies per day")
	var top *seatdv1.LicenseZombies
	for _, z := range report.GetTopLicenses() {
		if z.GetLicenseId() == lic.GetId() {
			top = z
		}
	}
	require.NotNil(t, top, "the license is among the top zombie licenses: %v", report.GetTopLicenses())
	require.GreaterOrEqual(t, top.GetZombieCount(), int64(2))
	require.EqualValues(t, 4, top.GetLeaseCount(), "leases ever taken on the license")
	require.Equal(t, "walk-through", top.GetLicenseName())
	require.GreaterOrEqual(t, report.GetMeanMinutesToCleanup(), 0.0)
}

// TestREADMEQuickstart runs the README's Quickstart as a person types it, so
// that the two cannot drift apart. Its first block, `make run`, is this
// test's seatd, started as make run starts it (embedded, with the operator
// key it makes itself in ./seatd-data); every other sh block of the section
// then runs in order, in one bash, from a directory laid out as a clone after
// make run (bin/seatctl, seatd-data/). The one change to the commands is the
// addresses: 127.0.0.1:7070 and 127.0.0.1:8080 become this seatd's, since
// other tests run beside it. After them the test checks what the reader was
// told to expect.
func TestREADMEQuickstart(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the README's quickstart needs %s: apt-get install -y %s (scripts/preflight.sh installs it)", tool, tool)
	}
	blocks := readmeQuickstart(t)
	require.Equal(t, "make run", blocks[0], "the quickstart starts with make run")
	require.Greater(t, len(blocks), 1)

	dir := t.TempDir()
	p := start(t, options{noOperatorKey: true, dataDir: filepath.Join(dir, "seatd-data")})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(buildSeatctl(t), filepath.Join(dir, "bin", "seatctl")))

	commands := strings.NewReplacer("127.0.0.1:7070", p.GRPCAddr, "127.0.0.1:8080", p.HTTPAddr).Replace(strings.Join(blocks[1:], "\n"))
	require.NotContains(t, commands, "127.0.0.1:7070")
	script := "set -euo pipefail\n" + commands + `
# The test's own checks, after the README's commands.
[[ $LIC_ID == lic_* && $KEY == slk_* && $LEASE == lse_* && $TOKEN == slt_* && $SHORT == slk_* ]] ||
  { echo "quickstart: a variable is not what it should be: $LIC_ID $KEY $LEASE $TOKEN $SHORT"; exit 1; }
[[ $(jq -r .lease.id <<<"$A") == "$LEASE" ]] || { echo "quickstart: the retry got another lease"; exit 1; }
echo "quickstart: done"
`
	// A bound on a hung command only: the script sleeps 6 s once and makes
	// about twenty calls.
	cmd := exec.CommandContext(stepContext(t, 5*time.Minute), "bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.NoError(t, err, "the README's quickstart failed:\n%s", out)
	for _, want := range []string{
		"ACME CAD",               // seatctl licenses create, then status
		`"seatLimit": 2`,         // the first acquisition, as jq prints it
		"HTTP 429",               // the third copy
		`"SEATS_EXHAUSTED"`,      // and why
		`"LEASE_STATE_RELEASED"`, // the release
		"LEASE_EXPIRED",          // the late heartbeat
		"1 cleaned",              // the zombie report
		"quickstart: done",
	} {
		require.Contains(t, out, want, "the README's quickstart output:\n%s", out)
	}
}

var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// readmeQuickstart is the sh blocks of README.md's "## Quickstart" section.
func readmeQuickstart(t *testing.T) []string {
	t.Helper()
	return readmeSection(t, "Quickstart")
}

// readmeSection is the sh blocks of README.md's "## title" section, in order.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	return markdownSection(t, "README.md", title)
}

// markdownSection is the sh blocks of the "## title" section of a page
// (a path from the repository's root), in order.
func markdownSection(t *testing.T, page, title string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", page))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "\n## "+title+"\n")
	require.True(t, ok, "%s has a \"## %s\" section", page, title)
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for _, m := range shBlock.FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, strings.TrimSpace(m[1]))
	}
	require.NotEmpty(t, blocks, "%s's %s has sh blocks", page, title)
	return blocks
}
