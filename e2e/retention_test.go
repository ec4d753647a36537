package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestRetentionPrunesOldHistory: the cleanup leader removes ended leases
// and audit entries older than their --retain-* ages and counts them on
// /metrics; the active lease stays.
func TestRetentionPrunesOldHistory(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{
		"--cleanup-interval", "1s", "--retention-interval", "1s",
		"--retain-leases", "1s", "--retain-audit", "1s",
	}})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	created, err := p.admin().CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "retention", Seats: 2, LeaseTtl: durationpb.New(time.Hour),
	}})
	require.NoError(t, err)
	lic := created.GetLicense()
	ended, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "gone"})
	require.NoError(t, err)
	_, err = p.seats().ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: ended.GetLease().GetId(), LeaseToken: ended.GetLeaseToken()})
	require.NoError(t, err)
	kept, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "kept"})
	require.NoError(t, err)

	pruned := func(kind string) float64 {
		v, _ := p.metricValue(t, `seatd_records_pruned_total{kind="`+kind+`"}`)
		return v
	}
	// A pass a second, each a second after the last: well within a minute
	// of the release, whatever the machine's load.
	eventually(t, time.Minute, "the ended lease and the license's audit entry pruned", func() bool {
		return pruned("leases") >= 1 && pruned("audit") >= 1
	})
	leases, err := p.admin().ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Len(t, leases.GetLeases(), 1, "only the active lease is left")
	require.Equal(t, kept.GetLease().GetId(), leases.GetLeases()[0].GetId())
	_, err = p.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: kept.GetLease().GetId(), LeaseToken: kept.GetLeaseToken()})
	require.NoError(t, err, "the active lease still heartbeats")
}

// TestWebhookRetention: with --retain-webhook-events (and the thresholds
// it must outlast) at a second, the cleanup leader removes a delivered
// delivery and its event, counted on /metrics; the endpoint stays.
func TestWebhookRetention(t *testing.T) {
	t.Parallel()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	p := start(t, options{args: []string{
		"--cleanup-interval", "1s", "--retention-interval", "1s", "--webhook-allow-private-addresses",
		"--retain-webhook-events", "1s", "--webhook-expiring-before", "1s", "--webhook-signal-window", "1s",
	}})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	ep, err := p.admin().CreateWebhookEndpoint(op, &seatdv1.CreateWebhookEndpointRequest{Url: receiver.URL, Types: []string{"license.created"}})
	require.NoError(t, err)
	_, err = p.admin().CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: "hooked", Seats: 1}})
	require.NoError(t, err)
	deliveries := func() []*seatdv1.WebhookDelivery {
		t.Helper()
		ds, err := p.admin().ListWebhookDeliveries(op, &seatdv1.ListWebhookDeliveriesRequest{EndpointId: ep.GetEndpoint().GetId()})
		require.NoError(t, err)
		return ds.GetDeliveries()
	}
	pruned := func(kind string) float64 {
		v, _ := p.metricValue(t, `seatd_records_pruned_total{kind="`+kind+`"}`)
		return v
	}
	// Delivered first (the log shows it), then removed with its event.
	eventually(t, time.Minute, "the delivery delivered", func() bool {
		ds := deliveries()
		return len(ds) == 1 && ds[0].GetState() == "delivered"
	})
	eventually(t, time.Minute, "the delivery and its event pruned", func() bool {
		return pruned("webhook_deliveries") >= 1 && pruned("webhook_events") >= 1
	})
	require.Empty(t, deliveries(), "the delivery log is empty")
	_, err = p.admin().GetWebhookEndpoint(op, &seatdv1.GetWebhookEndpointRequest{Id: ep.GetEndpoint().GetId()})
	require.NoError(t, err, "the endpoint stays")
}
