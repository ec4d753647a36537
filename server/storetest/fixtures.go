package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Timing of the suite. The store owns the clock, so the suite never compares
// its own clock with the store's; it passes a deadline the store handed out
// through the store's clock (passDeadline: moved where the store takes an
// injected one, waited on where it does not), or compares timestamps the
// store returned.
const (
	shortTTL = server.MinLeaseTTL // leases the tests let expire
	longTTL  = time.Hour          // leases that must stay live during a test

	// timeSlack absorbs the precision a backend may lose when it stores a
	// timestamp (PostgreSQL keeps microseconds, Redis scores may keep
	// milliseconds). The suite never relies on a difference this small.
	timeSlack = time.Millisecond
)

// openStore opens a fresh, isolated store for t and closes it when t ends.
func openStore(t *testing.T, newBackend Backend) server.Store {
	t.Helper()
	return openWith(t, newBackend(t))
}

// openWith opens the store of an existing data location and closes it when t
// ends.
func openWith(t *testing.T, open Opener) server.Store {
	t.Helper()
	s := open(t)
	require.NotNil(t, s, "Opener returned a nil store")
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

// reopenable is a store the test closes itself (to reopen the same data).
type reopenable struct {
	server.Store
	once sync.Once
	err  error
}

func (r *reopenable) Close() error {
	r.once.Do(func() { r.err = r.Store.Close() })
	return r.err
}

// openReopenable is openWith for a store the test will close early: the
// cleanup closes it only if the test did not.
func openReopenable(t *testing.T, open Opener) *reopenable {
	t.Helper()
	s := open(t)
	require.NotNil(t, s, "Opener returned a nil store")
	r := &reopenable{Store: s}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return r
}

// now is the suite's clock, only for values the caller sets (CreatedAt and
// friends), rounded to what every backend stores exactly.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// newTenant creates a tenant with a unique id.
func newTenant(t *testing.T, s server.Store) server.Tenant {
	t.Helper()
	id := server.NewID("tnt_")
	tn, err := s.CreateTenant(t.Context(), server.Tenant{ID: id, Name: "tenant " + id, CreatedAt: now()})
	require.NoError(t, err, "CreateTenant")
	require.Equal(t, id, tn.ID)
	return tn
}

// licenseFor returns a valid license of the tenant, not yet stored: one seat,
// long TTL, per-fingerprint leasing, active. mut adjusts it.
func licenseFor(tenantID string, mut func(*server.License)) server.License {
	at := now()
	l := server.License{
		ID:              server.NewID(server.PrefixLicenseID),
		TenantID:        tenantID,
		Key:             server.NewSecret(server.PrefixLicenseKey),
		Seats:           1,
		LeaseTTL:        longTTL,
		LeasingStrategy: server.PerFingerprint,
		Active:          true,
		CreatedAt:       at,
		UpdatedAt:       at,
	}
	l.Name = "license " + l.ID
	if mut != nil {
		mut(&l)
	}
	return l
}

// newLicense stores licenseFor(tenantID, mut).
func newLicense(t *testing.T, s server.Store, tenantID string, mut func(*server.License)) server.License {
	t.Helper()
	want := licenseFor(tenantID, mut)
	got, err := s.CreateLicense(t.Context(), want)
	require.NoError(t, err, "CreateLicense")
	requireLicense(t, want, got)
	return got
}

// License adjusters, composed with with().
func with(muts ...func(*server.License)) func(*server.License) {
	return func(l *server.License) {
		for _, m := range muts {
			m(l)
		}
	}
}

func seats(n int) func(*server.License) { return func(l *server.License) { l.Seats = n } }

func leaseTTL(d time.Duration) func(*server.License) {
	return func(l *server.License) { l.LeaseTTL = d }
}

func strategy(s server.LeasingStrategy) func(*server.License) {
	return func(l *server.License) { l.LeasingStrategy = s }
}

// acquireReq builds a request for a fresh lease id and token; mut adjusts it.
func acquireReq(key, fingerprint string, mut func(*server.AcquireRequest)) (server.AcquireRequest, string) {
	token := server.NewSecret(server.PrefixLeaseToken)
	req := server.AcquireRequest{
		LicenseKey:  key,
		Fingerprint: fingerprint,
		LeaseID:     server.NewID(server.PrefixLeaseID),
		TokenHash:   server.HashSecret(token),
	}
	if mut != nil {
		mut(&req)
	}
	return req, token
}

// tryAcquire acquires a seat and returns the result and the lease token. It
// asserts nothing, so goroutines may call it.
func tryAcquire(ctx context.Context, s server.Store, key, fingerprint string, mut func(*server.AcquireRequest)) (server.AcquireResult, string, error) {
	req, token := acquireReq(key, fingerprint, mut)
	res, err := s.Acquire(ctx, req)
	return res, token, err
}

// acquire acquires a seat that must be granted, and checks the result
// against the request and the contract.
func acquire(t *testing.T, s server.Store, l server.License, fingerprint string, mut func(*server.AcquireRequest)) (server.AcquireResult, string) {
	t.Helper()
	req, token := acquireReq(l.Key, fingerprint, mut)
	res, err := s.Acquire(t.Context(), req)
	require.NoError(t, err, "Acquire(%q)", fingerprint)
	checkGranted(t, l, req, res)
	return res, token
}

// checkGranted checks what every successful Acquire returns.
func checkGranted(t *testing.T, l server.License, req server.AcquireRequest, res server.AcquireResult) {
	t.Helper()
	ls := res.Lease
	require.Equal(t, l.ID, res.License.ID, "result License")
	require.Equal(t, l.ID, ls.LicenseID)
	require.Equal(t, l.TenantID, ls.TenantID)
	require.Equal(t, server.LeaseActive, ls.State)
	require.Equal(t, req.TokenHash, ls.TokenHash, "the lease takes the request's token hash (new or handed back)")
	require.True(t, ls.EndedAt.IsZero(), "EndedAt of an active lease")
	require.False(t, ls.AcquiredAt.IsZero(), "AcquiredAt")
	require.False(t, ls.LastHeartbeatAt.Before(ls.AcquiredAt), "LastHeartbeatAt before AcquiredAt")
	require.Equal(t, req.BorrowFor > 0, ls.Borrowed, "a borrow, and only a borrow, makes a borrowed lease")
	if !ls.Borrowed {
		require.WithinDuration(t, ls.LastHeartbeatAt.Add(res.License.LeaseTTL), ls.ExpiresAt, timeSlack,
			"deadline = LastHeartbeatAt + TTL")
	} else if !res.Existing {
		require.WithinDuration(t, ls.AcquiredAt.Add(req.BorrowFor), ls.ExpiresAt, timeSlack,
			"a borrowed lease's deadline = AcquiredAt + BorrowFor")
	}
	require.GreaterOrEqual(t, res.SeatsInUse, 1, "SeatsInUse counts this lease")
	if !res.Existing {
		// (An existing lease may be handed back over a limit lowered since.)
		require.LessOrEqual(t, res.SeatsInUse, res.License.SeatLimit(), "SeatsInUse above the seat limit")
		require.Equal(t, req.LeaseID, ls.ID, "a new lease takes the request's LeaseID")
		require.Equal(t, req.Fingerprint, ls.Fingerprint)
		require.Equal(t, req.User, ls.User)
		require.Equal(t, req.Hostname, ls.Hostname)
		require.Equal(t, req.IdempotencyKey, ls.IdempotencyKey)
		if ls.Borrowed {
			require.Empty(t, ls.DedupeKey, "a borrowed lease is never shared")
		} else {
			require.Equal(t, server.DedupeKey(res.License.LeasingStrategy, req.Fingerprint, req.User, req.Hostname), ls.DedupeKey)
		}
		requireMap(t, req.Metadata, ls.Metadata)
		require.WithinDuration(t, ls.AcquiredAt, ls.LastHeartbeatAt, timeSlack, "a new lease: LastHeartbeatAt = AcquiredAt")
	} else {
		require.NotEqual(t, req.LeaseID, ls.ID, "an existing lease keeps its id")
	}
}

// heartbeat renews a lease that must still be live.
func heartbeat(t *testing.T, s server.Store, leaseID, token string) server.Lease {
	t.Helper()
	ls, err := s.Heartbeat(t.Context(), leaseID, server.HashSecret(token))
	require.NoError(t, err, "Heartbeat(%s)", leaseID)
	require.Equal(t, leaseID, ls.ID)
	require.Equal(t, server.LeaseActive, ls.State)
	return ls
}

// release releases a lease that must be releasable.
func release(t *testing.T, s server.Store, leaseID, token string) server.Lease {
	t.Helper()
	ls, err := s.Release(t.Context(), leaseID, server.HashSecret(token))
	require.NoError(t, err, "Release(%s)", leaseID)
	require.Equal(t, leaseID, ls.ID)
	require.Equal(t, server.LeaseReleased, ls.State)
	require.False(t, ls.EndedAt.IsZero(), "EndedAt of a released lease")
	return ls
}

func getLease(t *testing.T, s server.Store, tenantID, leaseID string) server.Lease {
	t.Helper()
	ls, err := s.GetLease(t.Context(), tenantID, leaseID)
	require.NoError(t, err, "GetLease(%s)", leaseID)
	require.Equal(t, leaseID, ls.ID)
	return ls
}

func seatsInUse(t *testing.T, s server.Store, tenantID, licenseID string) int {
	t.Helper()
	n, err := s.SeatsInUse(t.Context(), tenantID, licenseID)
	require.NoError(t, err, "SeatsInUse")
	return n
}

func usageEvents(t *testing.T, s server.Store, tenantID, licenseID string) []server.UsageEvent {
	t.Helper()
	evs, err := s.UsageEvents(t.Context(), tenantID, licenseID)
	require.NoError(t, err, "UsageEvents")
	return evs
}

func cleanupEvents(t *testing.T, s server.Store, tenantID, licenseID string) []server.CleanupEvent {
	t.Helper()
	evs, err := s.CleanupEvents(t.Context(), tenantID, licenseID)
	require.NoError(t, err, "CleanupEvents")
	return evs
}

// usageOf returns the usage events of one lease.
func usageOf(evs []server.UsageEvent, leaseID string) []server.UsageEvent {
	var out []server.UsageEvent
	for _, e := range evs {
		if e.LeaseID == leaseID {
			out = append(out, e)
		}
	}
	return out
}

// cleanupOf returns the cleanup events of one lease.
func cleanupOf(evs []server.CleanupEvent, leaseID string) []server.CleanupEvent {
	var out []server.CleanupEvent
	for _, e := range evs {
		if e.LeaseID == leaseID {
			out = append(out, e)
		}
	}
	return out
}

// requireOneUsage checks that the ended lease ls has exactly one usage event
// among evs, and that the event matches it.
func requireOneUsage(t *testing.T, evs []server.UsageEvent, ls server.Lease) server.UsageEvent {
	t.Helper()
	mine := usageOf(evs, ls.ID)
	require.Len(t, mine, 1, "usage events of lease %s", ls.ID)
	e := mine[0]
	require.Equal(t, ls.LicenseID, e.LicenseID)
	require.Equal(t, ls.TenantID, e.TenantID)
	require.Equal(t, ls.State, e.EndState, "usage event EndState")
	require.WithinDuration(t, ls.AcquiredAt, e.StartedAt, timeSlack, "usage event StartedAt = AcquiredAt")
	require.GreaterOrEqual(t, e.Duration, time.Duration(0), "usage Duration")
	// The seat was held until the lease ended, or until its deadline if
	// that came first: an expired lease to its deadline (not to its last
	// heartbeat, nor to when the cleaner noticed), as the usage report
	// counts it (server.SeatHeldUntil).
	held := server.SeatHeldUntil(&ls, ls.EndedAt)
	require.WithinDuration(t, held, e.EndedAt, timeSlack, "usage event EndedAt = the earlier of the lease's end and its deadline")
	requireDuration(t, held.Sub(ls.AcquiredAt), e.Duration, "usage Duration = seat held until - AcquiredAt")
	requireDuration(t, e.EndedAt.Sub(e.StartedAt), e.Duration, "usage Duration = EndedAt - StartedAt")
	return e
}

// requireDuration compares durations up to the stores' time precision.
func requireDuration(t *testing.T, want, got time.Duration, msgAndArgs ...any) {
	t.Helper()
	require.InDelta(t, float64(want), float64(got), float64(2*timeSlack), msgAndArgs...)
}

// requireCode checks the kind and the machine-readable reason of err.
func requireCode(t *testing.T, err error, code server.Code, reason string, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, code, server.ErrorCode(err), append([]any{"code of %v", err}, msgAndArgs...)...)
	if reason != "" {
		require.Equal(t, reason, server.ErrorReason(err), append([]any{"reason of %v", err}, msgAndArgs...)...)
	}
}

// isCode reports whether err has the code and reason (for goroutines).
func isCode(err error, code server.Code, reason string) bool {
	return server.ErrorCode(err) == code && server.ErrorReason(err) == reason
}

// requireNotFoundOrEmpty accepts the two answers a scoped read may give for a
// license that is not the tenant's: ENOTFOUND, or nothing at all.
func requireNotFoundOrEmpty[T any](t *testing.T, got []T, err error, what string) {
	t.Helper()
	if err != nil {
		require.Equal(t, server.ENOTFOUND, server.ErrorCode(err), "%s: %v", what, err)
		return
	}
	require.Empty(t, got, "%s leaks another tenant's records", what)
}

// errMeta returns the metadata of a store error.
func errMeta(err error) map[string]string {
	var e *server.Error
	if errors.As(err, &e) {
		return e.Metadata
	}
	return nil
}

// errField returns the Field of a store error.
func errField(err error) string {
	var e *server.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// requireMap compares maps, treating nil and empty alike.
func requireMap(t *testing.T, want, got map[string]string, msgAndArgs ...any) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got, msgAndArgs...)
		return
	}
	require.Equal(t, want, got, msgAndArgs...)
}

// requireLicense compares two licenses field by field (times by instant).
func requireLicense(t *testing.T, want, got server.License) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, "license ID")
	require.Equal(t, want.TenantID, got.TenantID, "license TenantID")
	require.Equal(t, want.Key, got.Key, "license Key")
	require.Equal(t, want.Name, got.Name, "license Name")
	require.Equal(t, want.Seats, got.Seats, "license Seats")
	require.Equal(t, want.Overdraft, got.Overdraft, "license Overdraft")
	require.Equal(t, want.LeaseTTL, got.LeaseTTL, "license LeaseTTL")
	require.Equal(t, want.RevivalWindow, got.RevivalWindow, "license RevivalWindow")
	require.Equal(t, want.LeasingStrategy, got.LeasingStrategy, "license LeasingStrategy")
	require.Equal(t, want.Active, got.Active, "license Active")
	require.Equal(t, want.MaxBorrowDuration, got.MaxBorrowDuration, "license MaxBorrowDuration")
	require.Equal(t, want.MaxBorrowedSeats, got.MaxBorrowedSeats, "license MaxBorrowedSeats")
	require.Equal(t, want.AllowEarlyReturn, got.AllowEarlyReturn, "license AllowEarlyReturn")
	requireSameTime(t, want.ExpiresAt, got.ExpiresAt, "license ExpiresAt")
	requireMap(t, want.Metadata, got.Metadata, "license Metadata")
	requireSameTime(t, want.CreatedAt, got.CreatedAt, "license CreatedAt")
	requireSameTime(t, want.UpdatedAt, got.UpdatedAt, "license UpdatedAt")
}

// requireSameTime compares instants, zero included.
func requireSameTime(t *testing.T, want, got time.Time, msgAndArgs ...any) {
	t.Helper()
	if want.IsZero() {
		require.True(t, got.IsZero(), append([]any{"want zero time, got %v", got}, msgAndArgs...)...)
		return
	}
	require.WithinDuration(t, want, got, timeSlack, msgAndArgs...)
}

// requireSameLease checks that a lease did not change between two reads.
func requireSameLease(t *testing.T, want, got server.Lease, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, msgAndArgs...)
	require.Equal(t, want.State, got.State, msgAndArgs...)
	require.Equal(t, want.TokenHash, got.TokenHash, msgAndArgs...)
	requireSameTime(t, want.AcquiredAt, got.AcquiredAt, msgAndArgs...)
	requireSameTime(t, want.LastHeartbeatAt, got.LastHeartbeatAt, msgAndArgs...)
	requireSameTime(t, want.ExpiresAt, got.ExpiresAt, msgAndArgs...)
	requireSameTime(t, want.EndedAt, got.EndedAt, msgAndArgs...)
	require.Equal(t, want.Lingering, got.Lingering, msgAndArgs...)
}

// listAll pages through a list with the given page size and checks the
// paging: every page holds at most size items, the token ends the list, and
// no item comes twice.
func listAll[T any](t *testing.T, size int, id func(T) string, list func(p server.Page) ([]T, string, error)) []T {
	t.Helper()
	var all []T
	seen := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10_000, "paging does not end")
		items, next, err := list(server.Page{Size: size, Token: token})
		require.NoError(t, err, "list page %d", pages)
		require.LessOrEqual(t, len(items), server.Page{Size: size}.PageSize(), "page %d larger than its size", pages)
		for _, it := range items {
			require.False(t, seen[id(it)], "%s listed twice", id(it))
			seen[id(it)] = true
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		require.NotEqual(t, token, next, "page token did not advance")
		token = next
	}
}

func leaseIDs(ls []server.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func refIDs(refs []server.LeaseRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.LeaseID
	}
	return out
}

// compareRefs orders refs as DueLeases must: by (ExpiresAt, LeaseID).
func compareRefs(a, b server.LeaseRef) int {
	if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
		return c
	}
	return strings.Compare(a.LeaseID, b.LeaseID)
}

// compareNewestFirst orders leases as ListLeases must: AcquiredAt desc, ID desc.
func compareNewestFirst(a, b server.Lease) int {
	if c := b.AcquiredAt.Compare(a.AcquiredAt); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// expireAllDue runs cleanup passes until nothing is due, as a cleaner does,
// and returns the leases expired.
func expireAllDue(t *testing.T, s server.Store) []server.Lease {
	t.Helper()
	var out []server.Lease
	var after *server.LeaseRef
	for {
		refs, err := s.DueLeases(t.Context(), after, 2)
		require.NoError(t, err, "DueLeases")
		if len(refs) == 0 {
			return out
		}
		exp, err := s.ExpireLeases(t.Context(), refs)
		require.NoError(t, err, "ExpireLeases")
		out = append(out, exp...)
		after = &refs[len(refs)-1]
	}
}

// keysOf returns the sorted keys of a set.
func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
