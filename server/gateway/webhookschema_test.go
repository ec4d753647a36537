package gateway

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/webhooks"
)

// samplePayloads are what seatd sends for each event type: events made by
// the constructors the stores and the signals use (server.EventOfLease,
// EventOfLicense, EventOfAPIKey, NewEvent as webhooks.Signals and
// UpdateEndpoint call it), rendered by webhooks.Render, every optional
// field set so that each is checked.
func samplePayloads(t *testing.T) map[server.EventType][]byte {
	t.Helper()
	at := time.Date(2026, 11, 28, 22, 6, 56, 123456789, time.UTC)
	lic := &server.License{ID: "lic_0123456789abcdef01234567", TenantID: "acme", Name: "CAD", Seats: 10, Overdraft: 2,
		Active: true, ExpiresAt: at.Add(30 * 24 * time.Hour)}
	lease := &server.Lease{ID: "lse_0123456789abcdef01234567", TenantID: "acme", LicenseID: lic.ID + ".grt_0123456789abcdef01234567",
		Feature: "render", User: "ada", Hostname: "ws-1", State: server.LeaseRevoked, AcquiredAt: at.Add(-time.Hour),
		LastHeartbeatAt: at.Add(-time.Minute), ExpiresAt: at.Add(time.Minute), EndedAt: at}
	borrowed := *lease
	borrowed.State, borrowed.Borrowed, borrowed.EndedAt = server.LeaseActive, true, time.Time{}
	expired := *lease
	expired.State = server.LeaseExpired
	seats := &server.EventSeats{PoolID: lic.ID, Limit: 12, InUse: 11, Share: 90}
	grantExpiring := server.LicenseOfEvent(lic)
	grantExpiring.GrantID, grantExpiring.Feature = "grt_0123456789abcdef01234567", "render"

	// license.updated of a grant's change, of a license with a policy:
	// data.change, data.grant and license.policy_rules all set.
	withPolicy := *lic
	withPolicy.Policy = &server.Policy{Rules: make([]server.PolicyRule, 2)}
	grant := &server.Grant{ID: lic.ID + ".1a2b3c4d", LicenseID: lic.ID, TenantID: lic.TenantID, Feature: "render",
		Version: "2025", Seats: 3, Overdraft: 1, StartsAt: at.Add(-time.Hour), ExpiresAt: at.Add(time.Hour)}

	events := []server.Event{
		server.EventOfLicense(server.EventLicenseCreated, lic, at),
		server.EventOfLicenseChange(server.ChangeGrantUpdated, &withPolicy, grant, at),
		server.EventOfLicense(server.EventLicenseDeleted, lic, at),
		server.NewEvent(server.EventLicenseExpiring, at, lic.TenantID, lic.ID, grantExpiring.GrantID, "k1", server.EventData{License: grantExpiring}),
		server.NewEvent(server.EventLicenseExhausted, at, lic.TenantID, lic.ID, lic.ID, "k2", server.EventData{License: server.LicenseOfEvent(lic), Seats: seats}),
		server.NewEvent(server.EventLicensePeak, at, lic.TenantID, lic.ID, lic.ID, "k3", server.EventData{License: server.LicenseOfEvent(lic), Seats: seats}),
		server.EventOfLease(server.EventLeaseRevoked, lease, at),
		server.EventOfLease(server.EventLeaseExpired, &expired, at),
		server.EventOfLease(server.EventLeaseBorrowed, &borrowed, at),
		server.EventOfAPIKey(&server.APIKey{ID: "key_0123456789abcdef01234567", TenantID: "acme", Name: "ci", RevokedAt: at}),
		server.NewEvent(server.EventEndpointDisabled, at, "acme", "", "whe_0123456789abcdef01234567", "",
			server.EventData{Endpoint: &server.EventEndpoint{ID: "whe_0123456789abcdef01234567", URL: "https://hooks.example.com/x", Reason: "failing since ..."}}),
	}
	out := map[server.EventType][]byte{}
	for _, e := range events {
		body, err := webhooks.Render(server.Delivery{ID: "dlv_1", Event: e, Seq: 3})
		require.NoError(t, err)
		out[e.Type] = body
	}
	require.Len(t, out, len(server.EventTypes), "a sample of every event type")
	return out
}

// TestPayloadsMatchTheirSchema: the served OpenAPI 3.1 document has a
// schema for every event type, and what seatd sends for
// each validates against its schema, which is closed (an undocumented
// field fails) and names its type (another type's payload fails).
func TestPayloadsMatchTheirSchema(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	r := do(t, h, "GET", OpenAPI31Path, "", "")
	require.Equal(t, http.StatusOK, r.code)
	doc, err := openapi3.NewLoader().LoadFromData([]byte(r.body))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))

	samples := samplePayloads(t)
	for _, typ := range server.EventTypes {
		name := webhooks.SchemaName(typ)
		ref := doc.Components.Schemas[name]
		require.NotNil(t, ref, "components.schemas.%s", name)

		var body map[string]any
		require.NoError(t, json.Unmarshal(samples[typ], &body))
		require.NoError(t, ref.Value.VisitJSON(body), "%s: the payload seatd sends:\n%s", typ, samples[typ])

		body["undocumented"] = true
		require.Error(t, ref.Value.VisitJSON(body), "%s: a field the schema does not name", typ)
		delete(body, "undocumented")
		data := body["data"].(map[string]any)
		for k, v := range data {
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			obj["undocumented"] = 1
			require.Error(t, ref.Value.VisitJSON(body), "%s: data.%s with a field its schema does not name", typ, k)
			delete(obj, "undocumented")
		}
		for _, other := range server.EventTypes {
			if other == typ {
				continue
			}
			var ob map[string]any
			require.NoError(t, json.Unmarshal(samples[other], &ob))
			require.Error(t, ref.Value.VisitJSON(ob), "%s's schema takes a %s payload", typ, other)
		}
	}

	// The Swagger 2.0 document has the same definitions.
	r = do(t, h, "GET", "/openapi.json", "", "")
	var v2 openapi2.T
	require.NoError(t, json.Unmarshal([]byte(r.body), &v2))
	for _, typ := range server.EventTypes {
		require.Contains(t, v2.Definitions, webhooks.SchemaName(typ))
	}
}
