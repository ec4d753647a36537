package webhooks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/webhooks"
)

func eventsOfType(t *testing.T, b *bundle, typ server.EventType) []server.Event {
	t.Helper()
	es, err := b.store.EventsAfter(t.Context(), 0, 1000)
	require.NoError(t, err)
	var out []server.Event
	for _, e := range es {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestPeakAndExhaustedOncePerWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	s := webhooks.NewSignals(webhooks.SignalConfig{Store: b.store, Now: b.clock.Now, Window: time.Hour, PeakShare: 50})
	lic := b.license(t) // 2 seats
	res := func(inUse int) *server.AcquireResult {
		return &server.AcquireResult{License: lic, SeatsInUse: inUse, Lease: server.Lease{LicenseID: lic.ID}}
	}
	s.Granted(res(0))
	s.Wait()
	require.Empty(t, eventsOfType(t, b, server.EventLicensePeak), "under the share")
	for range 3 {
		s.Granted(res(1))
		s.Granted(res(2))
	}
	s.Wait()
	peaks := eventsOfType(t, b, server.EventLicensePeak)
	require.Len(t, peaks, 1, "once per window")
	var d server.EventData
	require.NoError(t, json.Unmarshal(peaks[0].Data, &d))
	require.Equal(t, &server.EventSeats{PoolID: lic.ID, Limit: 2, InUse: 1, Share: 50}, d.Seats)

	for range 3 {
		s.Exhausted(&lic, "", server.SeatsExhausted(2, 2))
	}
	s.Exhausted(&lic, "", server.ErrLicenseExpired) // not for want of a seat
	s.Wait()
	require.Len(t, eventsOfType(t, b, server.EventLicenseExhausted), 1)

	// Another process (a restart, another instance) in the same window
	// writes nothing: the dedupe key is the store's.
	again := webhooks.NewSignals(webhooks.SignalConfig{Store: b.store, Now: b.clock.Now, Window: time.Hour, PeakShare: 50})
	again.Exhausted(&lic, "", server.SeatsExhausted(2, 2))
	again.Wait()
	require.Len(t, eventsOfType(t, b, server.EventLicenseExhausted), 1)

	b.clock.Add(time.Hour)
	s.Exhausted(&lic, "", server.SeatsExhausted(2, 2))
	s.Granted(res(2))
	s.Wait()
	require.Len(t, eventsOfType(t, b, server.EventLicenseExhausted), 2, "the next window")
	require.Len(t, eventsOfType(t, b, server.EventLicensePeak), 2)
}

func TestExpiringOncePerThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	s := webhooks.NewSignals(webhooks.SignalConfig{Store: b.store, Now: b.clock.Now,
		ExpiringBefore: []time.Duration{24 * time.Hour, 7 * 24 * time.Hour}})
	lic := b.license(t)
	_, err := b.store.UpdateLicense(t.Context(), b.tenant.ID, lic.ID, func(l *server.License) error {
		l.ExpiresAt = b.clock.Now().Add(10 * 24 * time.Hour)
		return nil
	})
	require.NoError(t, err)
	s.SweepExpiring(t.Context())
	require.Empty(t, eventsOfType(t, b, server.EventLicenseExpiring), "10 days out: no threshold crossed")
	b.clock.Add(4 * 24 * time.Hour) // 6 days left
	s.SweepExpiring(t.Context())
	s.SweepExpiring(t.Context())
	require.Len(t, eventsOfType(t, b, server.EventLicenseExpiring), 1, "the 7-day threshold, once")
	b.clock.Add(5*24*time.Hour + time.Hour) // 23 hours left
	webhooks.NewSignals(webhooks.SignalConfig{Store: b.store, Now: b.clock.Now,
		ExpiringBefore: []time.Duration{24 * time.Hour, 7 * 24 * time.Hour}}).SweepExpiring(t.Context())
	s.SweepExpiring(t.Context())
	es := eventsOfType(t, b, server.EventLicenseExpiring)
	require.Len(t, es, 2, "the 1-day threshold, once across processes")
	var d server.EventData
	require.NoError(t, json.Unmarshal(es[1].Data, &d))
	require.Equal(t, lic.ID, d.License.ID)
	require.False(t, d.License.ExpiresAt.IsZero())
	b.clock.Add(2 * time.Hour)
	s.SweepExpiring(t.Context())
	require.Len(t, eventsOfType(t, b, server.EventLicenseExpiring), 2, "expired: nothing more")
}
