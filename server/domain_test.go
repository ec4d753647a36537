package server

import (
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestErrorText(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp 10.0.0.1:5432: connection refused")
	tests := []struct {
		err  *Error
		want string
	}{
		{Errorf(ENOTFOUND, ReasonLeaseNotFound, "lease %s not found", "lse_1"), "not_found: lease lse_1 not found"},
		{Invalid("license.seats", "must be between %d and %d", 1, 10), "invalid: license.seats: must be between 1 and 10"},
		{Unavailable(cause), "unavailable: storage backend unavailable, retry: " + cause.Error()},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.err.Error(), "the log line carries the cause")
	}
}

func TestInvalidNamesTheField(t *testing.T) {
	t.Parallel()
	e := Invalid("fingerprint", "is required")
	require.Equal(t, EINVALID, e.Code)
	require.Equal(t, ReasonInvalidArgument, e.Reason)
	require.Equal(t, "fingerprint", e.Field)
	require.Equal(t, "is required", e.Message)
}

func TestUnavailableKeepsTheCauseOutOfTheMessage(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp 10.0.0.1:5432: connection refused")
	e := Unavailable(cause)
	require.Equal(t, EUNAVAILABLE, e.Code)
	require.Equal(t, ReasonUnavailable, e.Reason)
	require.NotContains(t, e.Message, "10.0.0.1", "the client's message holds no internal detail")
	require.ErrorIs(t, e, cause, "the cause stays reachable for logs")
}

func TestErrorCodeAndReasonThroughWrapping(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("release: %w", ErrLeaseRevoked)
	require.Equal(t, EPRECONDITION, ErrorCode(wrapped))
	require.Equal(t, ReasonLeaseRevoked, ErrorReason(wrapped))

	plain := errors.New("boom")
	require.Equal(t, EINTERNAL, ErrorCode(plain), "anything that is not an *Error is internal")
	require.Empty(t, ErrorReason(plain))
	require.Equal(t, EINTERNAL, ErrorCode(nil))
	require.Empty(t, ErrorReason(nil))
}

func TestCommonErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    *Error
		code   Code
		reason string
	}{
		{ErrLicenseNotFound, ENOTFOUND, "LICENSE_NOT_FOUND"},
		{ErrLeaseNotFound, ENOTFOUND, "LEASE_NOT_FOUND"},
		{ErrTenantNotFound, ENOTFOUND, "TENANT_NOT_FOUND"},
		{ErrAPIKeyNotFound, ENOTFOUND, "API_KEY_NOT_FOUND"},
		{ErrLeaseExpired, EEXPIRED, "LEASE_EXPIRED"},
		{ErrLeaseReleased, EPRECONDITION, "LEASE_RELEASED"},
		{ErrLeaseRevoked, EPRECONDITION, "LEASE_REVOKED"},
		{ErrLeaseToken, EPERMISSION, "LEASE_TOKEN_INVALID"},
		{ErrLicenseInactive, EPRECONDITION, "LICENSE_INACTIVE"},
		{ErrLicenseExpired, EPRECONDITION, "LICENSE_EXPIRED"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.code, tt.err.Code, tt.reason)
		require.Equal(t, tt.reason, tt.err.Reason)
		require.NotEmpty(t, tt.err.Message, tt.reason)
	}
}

func TestSeatsExhausted(t *testing.T) {
	t.Parallel()
	e := SeatsExhausted(3, 5)
	require.Equal(t, EEXHAUSTED, e.Code)
	require.Equal(t, ReasonSeatsExhausted, e.Reason)
	require.Equal(t, map[string]string{"seats_in_use": "3", "seat_limit": "5"}, e.Metadata)
	require.Equal(t, "no seat free: 3 of 5 in use", e.Message)
}

func TestLicenseLimits(t *testing.T) {
	t.Parallel()
	l := License{Seats: 5, Overdraft: 2, LeaseTTL: 6 * time.Minute}
	require.Equal(t, 7, l.SeatLimit(), "seats plus overdraft")
	require.Equal(t, time.Minute, l.HeartbeatInterval(), "TTL/6")
	l.Overdraft = 0
	require.Equal(t, 5, l.SeatLimit())
}

func TestCheckUsable(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name      string
		active    bool
		expiresAt time.Time
		want      error
	}{
		{"active, no expiry", true, time.Time{}, nil},
		{"active, expires later", true, now.Add(time.Nanosecond), nil},
		{"expires now", true, now, ErrLicenseExpired},
		{"expired", true, now.Add(-time.Hour), ErrLicenseExpired},
		{"inactive", false, time.Time{}, ErrLicenseInactive},
		{"inactive and expired: inactive first", false, now.Add(-time.Hour), ErrLicenseInactive},
	}
	for _, tt := range tests {
		l := License{Active: tt.active, ExpiresAt: tt.expiresAt}
		err := l.CheckUsable(now)
		if tt.want == nil {
			require.NoError(t, err, tt.name)
			continue
		}
		require.ErrorIs(t, err, tt.want, tt.name)
	}
}

func TestLeaseLiveUntilItsDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l := Lease{State: LeaseActive, ExpiresAt: deadline}
	require.True(t, l.Live(deadline.Add(-time.Nanosecond)))
	require.False(t, l.Live(deadline), "an expired lease stops counting at its deadline")
	require.False(t, l.Live(deadline.Add(time.Hour)))
	for _, s := range []LeaseState{LeaseReleased, LeaseExpired, LeaseRevoked} {
		l.State = s
		require.False(t, l.Live(deadline.Add(-time.Hour)), "a %s lease holds no seat", s)
	}
}

func TestTerminalStates(t *testing.T) {
	t.Parallel()
	require.False(t, LeaseActive.Terminal())
	for _, s := range []LeaseState{LeaseReleased, LeaseExpired, LeaseRevoked} {
		require.True(t, s.Terminal(), s)
	}
	require.False(t, LeaseState("").Terminal())
}

func TestDedupeKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy              LeasingStrategy
		fingerprint, user, hn string
		want                  string
	}{
		{PerFingerprint, "fp", "alice", "host", "fp:fp"},
		{"", "fp", "alice", "host", "fp:fp"}, // unknown strategies act as the default
		{PerUser, "fp", "alice", "host", "user:alice"},
		{PerUser, "fp", "", "host", "fp:fp"}, // no user: by fingerprint
		{PerHostname, "fp", "alice", "host", "host:host"},
		{PerHostname, "fp", "alice", "", "fp:fp"},
		{PerAcquisition, "fp", "alice", "host", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, DedupeKey(tt.strategy, tt.fingerprint, tt.user, tt.hn), "%q %q/%q/%q", tt.strategy, tt.fingerprint, tt.user, tt.hn)
	}
	// The kinds never collide: a user named like a fingerprint is another key.
	require.NotEqual(t, DedupeKey(PerUser, "x", "bob", ""), DedupeKey(PerFingerprint, "bob", "", ""))
}

func TestPageSize(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultPageSize, Page{}.PageSize())
	require.Equal(t, DefaultPageSize, Page{Size: -1}.PageSize())
	require.Equal(t, 7, Page{Size: 7}.PageSize())
	require.Equal(t, MaxPageSize, Page{Size: MaxPageSize}.PageSize())
	require.Equal(t, MaxPageSize, Page{Size: MaxPageSize + 1}.PageSize())
}

func TestNewID(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^lse_[0-9a-f]{24}$`) // 96 random bits, URL-safe
	seen := map[string]bool{}
	for range 1000 {
		id := NewID(PrefixLeaseID)
		require.Regexp(t, shape, id)
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^slt_[A-Za-z0-9_-]{43}$`) // 32 bytes, base64url without padding
	seen := map[string]bool{}
	for range 1000 {
		s := NewSecret(PrefixLeaseToken)
		require.Regexp(t, shape, s)
		require.False(t, seen[s], "duplicate secret")
		seen[s] = true
	}
}

func TestHashSecret(t *testing.T) {
	t.Parallel()
	// SHA-256 test vector (FIPS 180-2): only the hash is ever stored.
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", HashSecret("abc"))
	s := NewSecret(PrefixAPISecret)
	h := HashSecret(s)
	require.Len(t, h, 64)
	require.NotContains(t, h, s)
	require.True(t, SecretMatches(s, h))
	require.False(t, SecretMatches(s+"x", h))
	require.False(t, SecretMatches("", h))
	require.False(t, SecretMatches(s, ""))
}

func TestWriteBehindSlack(t *testing.T) {
	t.Parallel()
	l := &License{LeaseTTL: 360 * time.Second}
	require.Equal(t, time.Minute, WriteBehindSlack(10*time.Second, l), "the heartbeat interval, when longer")
	l.LeaseTTL = 12 * time.Second
	require.Equal(t, 6*time.Second, WriteBehindSlack(5*time.Second, l), "the flush interval and a second, when longer")
}

func TestCheckBorrowEndsByExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := License{Seats: 1, MaxBorrowDuration: 30 * 24 * time.Hour, ExpiresAt: now.Add(time.Hour)}
	if err := l.CheckBorrow(now, time.Hour, 0, 0); err != nil {
		t.Fatalf("a borrow ending at the expiry: %v", err)
	}
	err := l.CheckBorrow(now, 7*24*time.Hour, 0, 0)
	var e *Error
	if !errors.As(err, &e) || e.Code != EINVALID || e.Field != "borrow_duration" {
		t.Fatalf("a borrow past the expiry: got %v, want EINVALID on borrow_duration", err)
	}
	l.ExpiresAt = time.Time{}
	if err := l.CheckBorrow(now, 7*24*time.Hour, 0, 0); err != nil {
		t.Fatalf("no expiry: %v", err)
	}
}
