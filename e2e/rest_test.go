package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRESTWalkthrough drives the REST gateway with plain net/http and JSON
// (lowerCamelCase fields), as a non-Go client would.
func TestRESTWalkthrough(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	op := p.OperatorKey

	// The license is the whole body, and the whole answer. Its TTL outlasts
	// the test: nothing here waits for an expiry, and with 2 s the first two
	// leases lapsed before the third acquisition on a loaded machine (200
	// where 429 was due).
	r := p.do(t, "POST", "/v1/admin/licenses", op, `{"seats":2,"leaseTtl":"60s","name":"rest"}`).requireCode(t, http.StatusOK)
	id, key := r.str(t, "id"), r.str(t, "key")
	require.NotEmpty(t, id)
	require.NotEmpty(t, key)
	require.EqualValues(t, 2, r.num(t, "seats"))
	require.Equal(t, "60s", r.str(t, "leaseTtl"))
	require.Equal(t, true, r.get(t, "active"))

	r = p.do(t, "GET", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusOK)
	require.Equal(t, id, r.str(t, "id"))

	acquire := func(fp string) httpResp {
		return p.do(t, "POST", "/v1/leases", "", map[string]any{"licenseKey": key, "fingerprint": fp})
	}
	a := acquire("fp-a").requireCode(t, http.StatusOK)
	aID, aToken := a.str(t, "lease.id"), a.str(t, "leaseToken")
	require.NotEmpty(t, aID)
	require.NotEmpty(t, aToken)
	require.NotEmpty(t, a.str(t, "heartbeatInterval"))
	require.EqualValues(t, 1, a.num(t, "seatsInUse"))
	require.EqualValues(t, 2, a.num(t, "seatLimit"))
	require.Equal(t, "LEASE_STATE_ACTIVE", a.str(t, "lease.state"))
	require.Equal(t, id, a.str(t, "lease.licenseId"))
	aExpires := parseTime(t, a.str(t, "lease.expiresAt"))

	b := acquire("fp-b").requireCode(t, http.StatusOK)
	bID := b.str(t, "lease.id")
	require.EqualValues(t, 2, b.num(t, "seatsInUse"))

	full := acquire("fp-c").requireCode(t, http.StatusTooManyRequests)
	require.Equal(t, "SEATS_EXHAUSTED", full.errorReason(), "body: %s", full.Raw)
	require.NotEmpty(t, full.str(t, "message"))

	hb := p.do(t, "POST", "/v1/leases/"+aID+":heartbeat", "", map[string]any{"leaseToken": aToken}).requireCode(t, http.StatusOK)
	hbExpires := parseTime(t, hb.str(t, "expiresAt"))
	require.False(t, hbExpires.Before(aExpires), "a heartbeat moves the deadline ahead: %s then %s", aExpires, hbExpires)
	require.NotEmpty(t, hb.str(t, "heartbeatInterval"))

	rel := p.do(t, "POST", "/v1/leases/"+aID+":release", "", map[string]any{"leaseToken": aToken}).requireCode(t, http.StatusOK)
	require.Equal(t, "LEASE_STATE_RELEASED", rel.str(t, "lease.state"))
	p.do(t, "POST", "/v1/leases/"+aID+":release", "", map[string]any{"leaseToken": aToken}).requireCode(t, http.StatusOK)

	// The released seat is free again.
	c := acquire("fp-c").requireCode(t, http.StatusOK)
	cID := c.str(t, "lease.id")

	leases := p.do(t, "GET", "/v1/admin/licenses/"+id+"/leases", op, nil).requireCode(t, http.StatusOK)
	list, _ := leases.get(t, "leases").([]any)
	require.Len(t, list, 3, "leases: %s", leases.Raw)
	var ids []string
	var prev time.Time
	for i, v := range list {
		l := v.(map[string]any)
		ids = append(ids, l["id"].(string))
		at := parseTime(t, l["acquiredAt"].(string))
		if i > 0 {
			require.False(t, at.After(prev), "newest first: %s", leases.Raw)
		}
		prev = at
	}
	require.Equal(t, []string{cID, bID, aID}, ids, "newest first")
	require.Equal(t, "LEASE_STATE_RELEASED", list[2].(map[string]any)["state"])

	// PATCH changes only the fields in the body.
	r = p.do(t, "PATCH", "/v1/admin/licenses/"+id, op, `{"seats":3}`).requireCode(t, http.StatusOK)
	require.EqualValues(t, 3, r.num(t, "seats"))
	require.Equal(t, "60s", r.str(t, "leaseTtl"), "fields not in the body stay")
	require.Equal(t, "rest", r.str(t, "name"))
	r = p.do(t, "GET", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusOK)
	require.EqualValues(t, 3, r.num(t, "seats"))

	r = p.do(t, "GET", "/v1/admin/cleanup", op, nil).requireCode(t, http.StatusOK)
	require.Equal(t, true, r.get(t, "isLeader"))
	require.NotEmpty(t, r.str(t, "instanceId"))
	require.Equal(t, "3600s", r.str(t, "interval"))

	r = p.do(t, "POST", "/v1/admin/cleanup", op, `{}`).requireCode(t, http.StatusOK)
	require.Equal(t, "ok", r.str(t, "run.result"))
	require.Equal(t, "manual", r.str(t, "run.trigger"))

	r = p.do(t, "GET", "/v1/admin/cleanup", op, nil).requireCode(t, http.StatusOK)
	require.Equal(t, "manual", r.str(t, "lastRun.trigger"))

	r = p.do(t, "GET", "/v1/admin/reports/zombies?topLimit=5", op, nil).requireCode(t, http.StatusOK)
	require.NotEmpty(t, r.str(t, "startTime"))
	require.NotEmpty(t, r.str(t, "endTime"))

	p.do(t, "DELETE", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusOK)
	p.do(t, "GET", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusNotFound)
	gone := acquire("fp-e").requireCode(t, http.StatusNotFound)
	require.Equal(t, "LICENSE_NOT_FOUND", gone.errorReason(), "body: %s", gone.Raw)
}

// TestRESTBadInput: bad input is 400, names the field, and changes nothing.
func TestRESTBadInput(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	op := p.OperatorKey

	count := func() int {
		r := p.do(t, "GET", "/v1/admin/licenses", op, nil).requireCode(t, http.StatusOK)
		l, _ := r.JSON["licenses"].([]any)
		return len(l)
	}
	r := p.do(t, "POST", "/v1/admin/licenses", op, `{"seats":1,"name":"existing"}`).requireCode(t, http.StatusOK)
	key := r.str(t, "key")
	licID := r.str(t, "id")
	require.Equal(t, 1, count())

	for _, tc := range []struct {
		body, field string
	}{
		{`{"seats":0}`, "license.seats"},
		{`{"leaseTtl":"60s"}`, "license.seats"},
		{`{"seats":-1}`, "license.seats"},
		{`{"seats":2,"leaseTtl":"0.5s"}`, "license.lease_ttl"},
		{`{"seats":2,"overdraft":-1}`, "license.overdraft"},
		{`{"seats":2,"key":"short"}`, "license.key"},
		{`{"seats":2,"id":"lic_mine"}`, "license.id"},
		{`{"seats":2,"expiresAt":"2001-01-01T00:00:00Z"}`, "license.expires_at"},
	} {
		r := p.do(t, "POST", "/v1/admin/licenses", op, tc.body).requireCode(t, http.StatusBadRequest)
		require.Contains(t, r.str(t, "message"), tc.field, "create %s: the message names the field", tc.body)
		require.Equal(t, "INVALID_ARGUMENT", r.errorReason(), "create %s: %s", tc.body, r.Raw)
		require.EqualValues(t, 3, r.num(t, "code"), "gRPC code in the body")
	}
	// Not even valid JSON for the message: still a 400, nothing created.
	p.do(t, "POST", "/v1/admin/licenses", op, `{"seats":2,"noSuchField":1}`).requireCode(t, http.StatusBadRequest)
	p.do(t, "POST", "/v1/admin/licenses", op, `{"seats":`).requireCode(t, http.StatusBadRequest)
	require.Equal(t, 1, count(), "bad input created a license")

	// A bad PATCH leaves the license as it was.
	p.do(t, "PATCH", "/v1/admin/licenses/"+licID, op, `{"seats":0}`).requireCode(t, http.StatusBadRequest)
	r = p.do(t, "GET", "/v1/admin/licenses/"+licID, op, nil).requireCode(t, http.StatusOK)
	require.EqualValues(t, 1, r.num(t, "seats"))

	leaseCount := func() int {
		r := p.do(t, "GET", "/v1/admin/licenses/"+licID+"/leases", op, nil).requireCode(t, http.StatusOK)
		l, _ := r.JSON["leases"].([]any)
		return len(l)
	}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"licenseKey": key, "fingerprint": ""}, "fingerprint"},
		{map[string]any{"licenseKey": key}, "fingerprint"},
		{map[string]any{"licenseKey": key, "fingerprint": string(long)}, "fingerprint"},
		{map[string]any{"fingerprint": "fp"}, "license_key"},
		{map[string]any{"licenseKey": key, "fingerprint": "fp", "user": string(long)}, "user"},
	} {
		r := p.do(t, "POST", "/v1/leases", "", tc.body).requireCode(t, http.StatusBadRequest)
		require.Contains(t, r.str(t, "message"), tc.field, "acquire %v: the message names the field", tc.body)
	}
	require.Equal(t, 0, leaseCount(), "bad input created a lease")

	// The one seat is still free.
	p.do(t, "POST", "/v1/leases", "", map[string]any{"licenseKey": key, "fingerprint": "fp"}).requireCode(t, http.StatusOK)
	require.Equal(t, 1, leaseCount())

	// Heartbeat and release without a token.
	for _, path := range []string{"/v1/leases/lse_x:heartbeat", "/v1/leases/lse_x:release"} {
		r := p.do(t, "POST", path, "", `{}`).requireCode(t, http.StatusBadRequest)
		require.Contains(t, r.str(t, "message"), "lease_token", "POST %s", path)
	}
	// An unknown lease, with a token.
	r = p.do(t, "POST", "/v1/leases/lse_nope:heartbeat", "", `{"leaseToken":"slt_whatever_1234567890"}`).requireCode(t, http.StatusNotFound)
	require.Equal(t, "LEASE_NOT_FOUND", r.errorReason())
	// An unknown license key.
	r = p.do(t, "POST", "/v1/leases", "", `{"licenseKey":"slk_nope_1234567890","fingerprint":"fp"}`).requireCode(t, http.StatusNotFound)
	require.Equal(t, "LICENSE_NOT_FOUND", r.errorReason())
}

func parseTime(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "timestamp %q", s)
	return at
}
