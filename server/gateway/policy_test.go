package gateway

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadPolicyOverRESTNamesTheRule: the policy is the body of PUT
// .../policy, so a refusal names the rule's field from there (400,
// INVALID_ARGUMENT), as it does over gRPC.
func TestBadPolicyOverRESTNamesTheRule(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	lic := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 3, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, lic.code, lic.body)
	policy := "/v1/admin/licenses/" + str(t, lic.json, "id") + "/policy"
	bad := do(t, h, "PUT", policy, operatorKey, `{"rules": [{"kind": "KIND_MAX", "count": 1, "subject": {"kind": "KIND_USER", "name": "bob"}},
		{"count": 1, "subject": {"kind": "KIND_USER", "name": "bob"}}]}`)
	require.Equal(t, http.StatusBadRequest, bad.code, bad.body)
	require.Equal(t, "INVALID_ARGUMENT", bad.reason())
	require.Contains(t, str(t, bad.json, "message"), "rules[1].kind: is required")
	badGroup := do(t, h, "PUT", "/v1/admin/groups/night", operatorKey, `{"kind": "KIND_USERS", "members": ["alice", "alice"]}`)
	require.Equal(t, http.StatusBadRequest, badGroup.code, badGroup.body)
	require.Contains(t, str(t, badGroup.json, "message"), "group.members[1]")
	got := do(t, h, "GET", policy, operatorKey, "")
	require.Equal(t, http.StatusOK, got.code, got.body)
	require.Empty(t, got.json["rules"], "no policy: %s", got.body)
}

// TestPolicyPutWithoutABodyIsRefused: a PUT of .../policy without a body
// sends no policy; it is refused (400 naming policy) and the policy kept,
// where it used to remove it. {} is how a policy is removed, on purpose.
func TestPolicyPutWithoutABodyIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	lic := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 3, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, lic.code, lic.body)
	policy := "/v1/admin/licenses/" + str(t, lic.json, "id") + "/policy"
	set := do(t, h, "PUT", policy, operatorKey, `{"rules": [{"kind": "KIND_EXCLUDE", "subject": {"kind": "KIND_USER", "name": "intern"}}]}`)
	require.Equal(t, http.StatusOK, set.code, set.body)
	for _, body := range []string{"", " \n", "null"} {
		empty := do(t, h, "PUT", policy, operatorKey, body)
		require.Equal(t, http.StatusBadRequest, empty.code, "body %q: %s", body, empty.body)
		if body != "null" { // which does not decode: MALFORMED_REQUEST
			require.Equal(t, "INVALID_ARGUMENT", empty.reason())
			require.Contains(t, str(t, empty.json, "message"), "policy: is required")
		}
		got := do(t, h, "GET", policy, operatorKey, "")
		require.Len(t, got.json["rules"], 1, "body %q: the policy is kept: %s", body, got.body)
	}
	removed := do(t, h, "PUT", policy, operatorKey, `{}`)
	require.Equal(t, http.StatusOK, removed.code, removed.body)
	got := do(t, h, "GET", policy, operatorKey, "")
	require.Empty(t, got.json["rules"], "{} removes it: %s", got.body)
}

// TestSitePolicyOverREST: a group put under its name, a policy put as the
// body and read back, a client refused by it (403 EXCLUDED, 429
// USER_LIMIT), a group in use kept (400 GROUP_IN_USE), an unknown one 404.
// It needs a store that keeps and enforces policies.
func TestSitePolicyOverREST(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	lic := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 3, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, lic.code, lic.body)
	key, licID := str(t, lic.json, "key"), str(t, lic.json, "id")

	g := do(t, h, "PUT", "/v1/admin/groups/night", operatorKey, `{"kind": "KIND_USERS", "members": ["alice", "carol"]}`)
	require.Equal(t, http.StatusOK, g.code, g.body)
	require.Equal(t, "night", str(t, g.json, "name"), "the answer is the group itself, named by the path")
	list := do(t, h, "GET", "/v1/admin/groups", operatorKey, "")
	require.Equal(t, http.StatusOK, list.code, list.body)
	require.Len(t, list.json["groups"], 1, list.body)

	policy := "/v1/admin/licenses/" + licID + "/policy"
	set := do(t, h, "PUT", policy, operatorKey, `{"rules": [
		{"kind": "KIND_RESERVE", "count": 1, "subject": {"kind": "KIND_GROUP", "name": "night"}},
		{"kind": "KIND_MAX", "count": 1, "subject": {"kind": "KIND_USER", "name": "bob"}},
		{"kind": "KIND_EXCLUDE", "subject": {"kind": "KIND_USER", "name": "intern"}}]}`)
	require.Equal(t, http.StatusOK, set.code, set.body)
	require.Equal(t, licID, str(t, set.json, "licenseId"), "the answer is the policy itself")
	require.Len(t, set.json["rules"], 3, set.body)
	got := do(t, h, "GET", policy, operatorKey, "")
	require.Equal(t, http.StatusOK, got.code, got.body)
	require.JSONEq(t, set.body, got.body)

	acquire := func(user, host string) reply {
		return do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "`+host+`", "user": "`+user+`", "hostname": "`+host+`"}`)
	}
	excluded := acquire("intern", "ws-9")
	require.Equal(t, http.StatusForbidden, excluded.code, excluded.body)
	require.Equal(t, "EXCLUDED", excluded.reason())
	require.Equal(t, http.StatusOK, acquire("bob", "ws-1").code)
	limited := acquire("bob", "ws-2")
	require.Equal(t, http.StatusTooManyRequests, limited.code, limited.body)
	require.Equal(t, "USER_LIMIT", limited.reason())

	inUse := do(t, h, "DELETE", "/v1/admin/groups/night", operatorKey, "")
	require.Equal(t, http.StatusBadRequest, inUse.code, inUse.body)
	require.Equal(t, "GROUP_IN_USE", inUse.reason())
	unknown := do(t, h, "DELETE", "/v1/admin/groups/day", operatorKey, "")
	require.Equal(t, http.StatusNotFound, unknown.code, unknown.body)
	require.Equal(t, "GROUP_NOT_FOUND", unknown.reason())
}
