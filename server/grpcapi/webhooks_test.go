package grpcapi

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestWebhookEndpointsOverTheAPI: tenant-scoped, audited, the secret
// answered at creation and rotation only, bad input named.
func TestWebhookEndpointsOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	acme := e.apiKey(t, "acme")
	globex := e.apiKey(t, "globex")

	created, err := e.admin.CreateWebhookEndpoint(as(t, acme), &seatdv1.CreateWebhookEndpointRequest{
		Url: "https://hooks.example.com/seatd", Types: []string{"lease.expired", "license.exhausted"}, Description: "billing",
	})
	require.NoError(t, err)
	ep := created.GetEndpoint()
	require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, created.GetSecret())
	require.Equal(t, "acme", ep.GetTenantId())
	require.Equal(t, []string{"lease.expired", "license.exhausted"}, ep.GetTypes())

	list, err := e.admin.ListWebhookEndpoints(as(t, acme), &seatdv1.ListWebhookEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetEndpoints(), 1)
	require.NotContains(t, list.String(), created.GetSecret())
	got, err := e.admin.GetWebhookEndpoint(as(t, acme), &seatdv1.GetWebhookEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	require.NotContains(t, got.String(), created.GetSecret())

	// Another tenant sees nothing of it.
	_, err = e.admin.GetWebhookEndpoint(as(t, globex), &seatdv1.GetWebhookEndpointRequest{Id: ep.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonEndpointNotFound)
	_, err = e.admin.DeleteWebhookEndpoint(as(t, globex), &seatdv1.DeleteWebhookEndpointRequest{Id: ep.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonEndpointNotFound)
	_, err = e.admin.ListWebhookEndpoints(as(t, globex), &seatdv1.ListWebhookEndpointsRequest{TenantId: "acme"})
	requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
	others, err := e.admin.ListWebhookEndpoints(as(t, globex), &seatdv1.ListWebhookEndpointsRequest{})
	require.NoError(t, err)
	require.Empty(t, others.GetEndpoints())

	// Bad input names its field and changes nothing.
	for field, req := range map[string]*seatdv1.CreateWebhookEndpointRequest{
		"endpoint.url":         {Url: "https://169.254.169.254/latest/meta-data"},
		"endpoint.types[1]":    {Url: "https://hooks.example.com/", Types: []string{"lease.expired", "lease.exploded"}},
		"endpoint.secret":      {Url: "https://hooks.example.com/", Secret: "not-a-secret"},
		"endpoint.description": {Url: "https://hooks.example.com/", Description: strings.Repeat("a", 300)},
	} {
		_, err := e.admin.CreateWebhookEndpoint(as(t, acme), req)
		requireInvalid(t, err, field, field)
	}
	_, err = e.admin.CreateWebhookEndpoint(as(t, acme), &seatdv1.CreateWebhookEndpointRequest{Url: "http://hooks.example.com/"})
	requireInvalid(t, err, "endpoint.url", "plain http")
	list, err = e.admin.ListWebhookEndpoints(as(t, acme), &seatdv1.ListWebhookEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetEndpoints(), 1, "nothing created by a refused call")

	rotated, err := e.admin.RotateWebhookSecret(as(t, acme), &seatdv1.RotateWebhookSecretRequest{Id: ep.GetId(), KeepPrevious: durationpb.New(2 * time.Hour)})
	require.NoError(t, err)
	require.NotEqual(t, created.GetSecret(), rotated.GetSecret())
	require.Regexp(t, `^whsec_`, rotated.GetSecret())
	require.NotNil(t, rotated.GetEndpoint().GetPreviousSecretUntil())
	_, err = e.admin.RotateWebhookSecret(as(t, acme), &seatdv1.RotateWebhookSecretRequest{Id: ep.GetId(), KeepPrevious: durationpb.New(30 * 24 * time.Hour)})
	requireInvalid(t, err, "keep_previous")

	disabled, err := e.admin.SetWebhookEndpointDisabled(as(t, acme), &seatdv1.SetWebhookEndpointDisabledRequest{Id: ep.GetId(), Disabled: true})
	require.NoError(t, err)
	require.True(t, disabled.GetEndpoint().GetDisabled())

	// A license change is an event; once fanned out it is in the log.
	_, err = e.admin.CreateLicense(as(t, acme), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: "cad", Seats: 1, LeaseTtl: durationpb.New(time.Minute)}})
	require.NoError(t, err)
	_, err = e.store.(server.WebhookStore).FanOut(t.Context(), time.Now(), 100)
	require.NoError(t, err)
	deliveries, err := e.admin.ListWebhookDeliveries(as(t, acme), &seatdv1.ListWebhookDeliveriesRequest{EndpointId: ep.GetId()})
	require.NoError(t, err)
	require.Empty(t, deliveries.GetDeliveries(), "a disabled endpoint is sent nothing; its types: lease.expired, license.exhausted")
	_, err = e.admin.ReplayWebhookDelivery(as(t, acme), &seatdv1.ReplayWebhookDeliveryRequest{Id: "dlv_missing"})
	requireStatus(t, err, codes.NotFound, server.ReasonDeliveryNotFound)

	_, err = e.admin.DeleteWebhookEndpoint(as(t, acme), &seatdv1.DeleteWebhookEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{TenantId: "acme"})
	require.NoError(t, err)
	var actions []string
	for _, a := range audit.GetAuditEvents() {
		actions = append(actions, a.GetAction())
	}
	require.Subset(t, actions, []string{"webhook.create", "webhook.rotate_secret", "webhook.disable", "webhook.delete"})
	require.NotContains(t, audit.String(), created.GetSecret(), "no secret in the audit log")
	require.NotContains(t, e.logs.String(), created.GetSecret(), "nor in the log")
}

// TestWebhookEndpointLimit: a tenant at its --tenant-max-webhook-endpoints
// is refused another with a reason of its own, naming the limit; the
// other tenants are not, and deleting one makes room.
func TestWebhookEndpointLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Webhooks.MaxEndpoints = 2 })
	acme := e.apiKey(t, "acme")
	globex := e.apiKey(t, "globex")
	create := func(key string) (*seatdv1.CreateWebhookEndpointResponse, error) {
		return e.admin.CreateWebhookEndpoint(as(t, key), &seatdv1.CreateWebhookEndpointRequest{Url: "https://hooks.example.com/seatd"})
	}
	first, err := create(acme)
	require.NoError(t, err)
	_, err = create(acme)
	require.NoError(t, err)
	_, err = create(acme)
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonEndpointLimit)
	require.Equal(t, "2", errorInfo(st).GetMetadata()["limit"])
	require.Contains(t, st.Message(), "2 webhook endpoints")
	list, err := e.admin.ListWebhookEndpoints(as(t, acme), &seatdv1.ListWebhookEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetEndpoints(), 2, "nothing created by the refused call")
	_, err = create(globex)
	require.NoError(t, err, "the limit is per tenant")
	_, err = e.admin.DeleteWebhookEndpoint(as(t, acme), &seatdv1.DeleteWebhookEndpointRequest{Id: first.GetEndpoint().GetId()})
	require.NoError(t, err)
	_, err = create(acme)
	require.NoError(t, err, "room again")
}
