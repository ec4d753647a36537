package e2e

// Helpers of the distributed-mode tests: licenses, calls with their own
// deadline, outcome tallies, leader views and metrics.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// callTimeout bounds one RPC of the distributed tests. It is long on
// purpose: a call must end with the server's answer (UNAVAILABLE when a
// backend is down), never with the client giving up.
const callTimeout = eventTimeout

func callCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, callTimeout)
}

func newLicense(t testing.TB, p *proc, seats int32, ttl time.Duration, name string) *seatdv1.License {
	t.Helper()
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	created, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: name, Seats: seats, LeaseTtl: durationpb.New(ttl),
	}})
	require.NoError(t, err, "create license %s", name)
	return created.GetLicense()
}

func (p *proc) acquire(ctx context.Context, key, fp string) (*seatdv1.AcquireSeatResponse, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	return p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: fp})
}

func (p *proc) heartbeat(ctx context.Context, l *seatdv1.AcquireSeatResponse) (*seatdv1.HeartbeatResponse, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	return p.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
}

func (p *proc) release(ctx context.Context, l *seatdv1.AcquireSeatResponse) (*seatdv1.ReleaseSeatResponse, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	return p.seats().ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
}

func (p *proc) cleanupNow(ctx context.Context) (*seatdv1.CleanupRun, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	resp, err := p.admin().Cleanup(p.asOperator(ctx), &seatdv1.CleanupRequest{})
	return resp.GetRun(), err
}

func (p *proc) cleanupStatus(ctx context.Context) (*seatdv1.GetCleanupStatusResponse, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	return p.admin().GetCleanupStatus(p.asOperator(ctx), &seatdv1.GetCleanupStatusRequest{})
}

func (p *proc) leases(t testing.TB, licenseID string, state seatdv1.LeaseState) []*seatdv1.Lease {
	t.Helper()
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	resp, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: licenseID, State: state, PageSize: 1000})
	require.NoError(t, err, "ListLeases on %s", p.GRPCAddr)
	require.Empty(t, resp.GetNextPageToken())
	return resp.GetLeases()
}

// outcome names a call's result: "OK", or the status code and the
// ErrorInfo reason ("RESOURCE_EXHAUSTED/SEATS_EXHAUSTED").
func outcome(err error) string {
	if err == nil {
		return "OK"
	}
	st := status.Convert(err)
	name := strings.ToUpper(strings.ReplaceAll(codeName(st.Code()), " ", "_"))
	if info := errorInfo(st); info != nil {
		return name + "/" + info.GetReason()
	}
	return name
}

func codeName(c codes.Code) string {
	// codes.Code.String is "ResourceExhausted"; use the canonical names.
	names := map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
		codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
		codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
		codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
		codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
		codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return c.String()
}

const (
	outOK        = "OK"
	outExhausted = "RESOURCE_EXHAUSTED/SEATS_EXHAUSTED"
	outExpired   = "FAILED_PRECONDITION/LEASE_EXPIRED"
)

// isUnavailable: UNAVAILABLE, with or without ErrorInfo.
func isUnavailable(out string) bool { return strings.HasPrefix(out, "UNAVAILABLE") }

// tally counts outcomes by label; unexpected ones are kept as examples.
type tally struct {
	mu         sync.Mutex
	counts     map[string]int
	unexpected []string
}

func newTally() *tally { return &tally{counts: map[string]int{}} }

func (c *tally) add(label string) {
	c.mu.Lock()
	c.counts[label]++
	c.mu.Unlock()
}

func (c *tally) get(label string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[label]
}

// bad records an unexpected outcome (the test fails on it later, from its
// own goroutine).
func (c *tally) bad(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts["UNEXPECTED"]++
	if len(c.unexpected) < 20 {
		c.unexpected = append(c.unexpected, fmt.Sprintf(format, args...))
	}
}

func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-70s %d\n", k, c.counts[k])
	}
	return b.String()
}

func (c *tally) requireNoUnexpected(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	unexpected := slices.Clone(c.unexpected)
	c.mu.Unlock()
	require.Empty(t, unexpected, "unexpected outcomes; all outcomes:\n%s", c.String())
}

// ---- cleanup leader ----

// leaderStatuses asks every instance for its cleanup status.
func leaderStatuses(ctx context.Context, procs []*proc) ([]*seatdv1.GetCleanupStatusResponse, error) {
	out := make([]*seatdv1.GetCleanupStatusResponse, len(procs))
	for i, p := range procs {
		st, err := p.cleanupStatus(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.GRPCAddr, err)
		}
		out[i] = st
	}
	return out, nil
}

// agreedLeader returns the index of the leader when every status names the
// same non-empty leader, exactly one instance says it leads, and that one
// is the one named.
func agreedLeader(sts []*seatdv1.GetCleanupStatusResponse) (int, bool) {
	leader, leaders := -1, 0
	for i, st := range sts {
		if st.GetLeaderId() == "" || st.GetLeaderId() != sts[0].GetLeaderId() {
			return -1, false
		}
		if st.GetIsLeader() {
			leaders++
			leader = i
		}
	}
	if leaders != 1 || sts[leader].GetInstanceId() != sts[leader].GetLeaderId() {
		return -1, false
	}
	return leader, true
}

// waitForOneLeader polls until the instances agree on one leader in three
// polls in a row, and returns its index in procs.
func waitForOneLeader(t testing.TB, procs []*proc, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	streak, last := 0, -1
	var lastView string
	for {
		sts, err := leaderStatuses(t.Context(), procs)
		if err == nil {
			if i, ok := agreedLeader(sts); ok && (streak == 0 || i == last) {
				streak, last = streak+1, i
				if streak == 3 {
					return i
				}
			} else {
				streak = 0
			}
			lastView = fmt.Sprint(sts)
		} else {
			streak, lastView = 0, err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances did not agree on one cleanup leader within %s; last view: %s", timeout, lastView)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- metrics ----

// metricSum is the sum of every sample of a metric on /metrics.
func (p *proc) metricSum(t testing.TB, name string) float64 {
	t.Helper()
	resp, err := httpClient.Get(p.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(t, err, "metric line %q", line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

// ---- records in PostgreSQL ----

// leaseRecord is a session row with its usage and cleanup events.
type leaseRecord struct {
	ID, LicenseID, State string
	Expired              bool // expired_at set
	Ended                bool // ended_at set
	UsageEvents          int
	UsageEndState        string
	CleanupEvents        int
}

func leaseRecords(t testing.TB, db *pgx.Conn, licenseIDs ...string) map[string]leaseRecord {
	t.Helper()
	rows, err := db.Query(t.Context(), `
		SELECT s.id, s.license_id, s.state, s.expired_at IS NOT NULL, s.ended_at IS NOT NULL,
			(SELECT count(*) FROM usage_events u WHERE u.lease_id = s.id),
			COALESCE((SELECT min(u.end_state) FROM usage_events u WHERE u.lease_id = s.id), ''),
			(SELECT count(*) FROM cleanup_events c WHERE c.lease_id = s.id)
		FROM sessions s WHERE s.license_id = ANY($1)`, licenseIDs)
	require.NoError(t, err)
	out := map[string]leaseRecord{}
	for rows.Next() {
		var r leaseRecord
		require.NoError(t, rows.Scan(&r.ID, &r.LicenseID, &r.State, &r.Expired, &r.Ended, &r.UsageEvents, &r.UsageEndState, &r.CleanupEvents))
		out[r.ID] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// requireExactlyOnceRecords checks invariant 5 on the whole schema: no
// lease has two usage or two cleanup events, every ended lease has one
// usage event (of its end state), every expired lease one cleanup event,
// and only expired leases have one.
func requireExactlyOnceRecords(t testing.TB, db *pgx.Conn) {
	t.Helper()
	ctx := t.Context()
	for _, q := range []string{
		`SELECT lease_id || ' x' || count(*) FROM usage_events GROUP BY lease_id HAVING count(*) > 1`,
		`SELECT lease_id || ' x' || count(*) FROM cleanup_events GROUP BY lease_id HAVING count(*) > 1`,
		`SELECT s.id || ' ' || s.state FROM sessions s WHERE s.state <> 'active'
			AND NOT EXISTS (SELECT 1 FROM usage_events u WHERE u.lease_id = s.id AND u.end_state = s.state)`,
		`SELECT s.id || ' has a usage event but is active' FROM sessions s JOIN usage_events u ON u.lease_id = s.id WHERE s.state = 'active'`,
		`SELECT s.id || ' expired without cleanup event' FROM sessions s WHERE s.state = 'expired'
			AND NOT EXISTS (SELECT 1 FROM cleanup_events c WHERE c.lease_id = s.id)`,
		`SELECT c.lease_id || ' has a cleanup event but is ' || COALESCE(s.state, 'missing') FROM cleanup_events c
			LEFT JOIN sessions s ON s.id = c.lease_id WHERE s.state IS DISTINCT FROM 'expired'`,
		`SELECT s.id || ' expired without expired_at' FROM sessions s WHERE s.state = 'expired' AND s.expired_at IS NULL`,
	} {
		rows, err := db.Query(ctx, q)
		require.NoError(t, err, q)
		bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err, q)
		require.Empty(t, bad, "records break exactly-once: %s", q)
	}
}

func countActive(t testing.TB, db *pgx.Conn, licenseID string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM sessions WHERE license_id = $1 AND state = 'active'`, licenseID).Scan(&n))
	return n
}

// leakedDetail returns the internal detail a client-visible error message
// shows, if any (docs/concepts/errors.md: no internal error text, stack or SQL
// leaks to clients), e.g. a backend's address or driver error.
func leakedDetail(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.ToLower(status.Convert(err).Message())
	for _, s := range []string{"dial tcp", "connection refused", "127.0.0.1", "pgx", "pgconn", "redis:", "sqlstate",
		"select ", "insert ", "update ", "eof", "broken pipe", "reset by peer", "goroutine", ".go:"} {
		if strings.Contains(msg, s) {
			return s
		}
	}
	return ""
}
