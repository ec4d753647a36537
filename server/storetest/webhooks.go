package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Webhooks: invariant 14. Every change that reports an event writes
// exactly one in the same transaction, a failed change writes none, and
// the deliveries of one (endpoint, license) go in order.

func webhooksOf(t *testing.T, s server.Store) server.WebhookStore {
	t.Helper()
	w, ok := s.(server.WebhookStore)
	require.True(t, ok, "the store under test must implement server.WebhookStore (%T)", s)
	return w
}

// eventsOf lists the tenant's events in the outbox, by Seq.
func eventsOf(t *testing.T, w server.WebhookStore, tenantID string) []server.Event {
	t.Helper()
	var out []server.Event
	var after int64
	for {
		page, err := w.EventsAfter(t.Context(), after, 100)
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		for _, e := range page {
			require.Greater(t, e.Seq, after, "EventsAfter lists by Seq")
			after = e.Seq
			if e.TenantID == tenantID {
				out = append(out, e)
			}
		}
	}
}

// named is an event's type and subject, for comparing lists.
func named(es []server.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Type) + " " + e.SubjectID
	}
	return out
}

func eventData(t *testing.T, e server.Event) server.EventData {
	t.Helper()
	var d server.EventData
	require.NoError(t, json.Unmarshal(e.Data, &d), "event data of %s", e.Type)
	return d
}

func testWebhooks(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()

	w.run("EachChangeWritesOneEvent", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		tn := newTenant(t, s)
		// lic's leases outlive the lapse of short's (3 × its TTL at most).
		lic := newLicense(t, s, tn.ID, with(seats(5), leaseTTL(3*longTTL), borrowing(3*longTTL, 0)))
		short := newLicense(t, s, tn.ID, with(seats(2), leaseTTL(lapsingTTL(s))))
		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats = 6; return nil })
		require.NoError(t, err)

		// Heartbeats and releases report nothing.
		kept, keptTok := acquire(t, s, lic, "kept", nil)
		heartbeat(t, s, kept.Lease.ID, keptTok)
		rel, relTok := acquire(t, s, lic, "released", nil)
		release(t, s, rel.Lease.ID, relTok)
		rev, _ := acquire(t, s, lic, "revoked", nil)
		_, err = s.Revoke(t.Context(), tn.ID, rev.Lease.ID)
		require.NoError(t, err)
		_, err = s.Revoke(t.Context(), tn.ID, rev.Lease.ID) // again: no change, no event
		require.NoError(t, err)
		bor, _ := acquire(t, s, lic, "laptop", borrowFor(3*longTTL))
		zombie, zombieTok := acquire(t, s, short, "zombie", nil)
		zombieHB := heartbeat(t, s, zombie.Lease.ID, zombieTok)
		passDeadlines(t, s, zombieHB)
		refs, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		expired, err := s.ExpireLeases(t.Context(), refs)
		require.NoError(t, err)
		require.Len(t, expired, 1)
		_, err = s.ExpireLeases(t.Context(), refs) // again: recorded once
		require.NoError(t, err)

		key := server.APIKey{
			ID: server.NewID(server.PrefixAPIKeyID), TenantID: tn.ID, Name: "ci",
			SecretHash: server.HashSecret(server.NewSecret(server.PrefixAPISecret)), CreatedAt: now(),
		}
		_, err = s.CreateAPIKey(t.Context(), key)
		require.NoError(t, err)
		_, err = s.RevokeAPIKey(t.Context(), key.ID)
		require.NoError(t, err)
		_, err = s.RevokeAPIKey(t.Context(), key.ID) // again: no change, no event
		require.NoError(t, err)

		n, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
		require.NoError(t, err)
		require.Equal(t, 2, n, "kept and the borrowed lease are revoked with their license")

		es := eventsOf(t, hooks, tn.ID)
		want := []string{
			"license.created " + lic.ID, "license.created " + short.ID, "license.updated " + lic.ID,
			"lease.revoked " + rev.Lease.ID, "lease.borrowed " + bor.Lease.ID, "lease.expired " + zombie.Lease.ID,
			"apikey.revoked " + key.ID,
		}
		got := named(es)
		require.Equal(t, want, got[:len(want)], "one event per change, in the order of the changes")
		// The delete's: its two leases revoked (in any order), then the license deleted.
		require.ElementsMatch(t, []string{"lease.revoked " + kept.Lease.ID, "lease.revoked " + bor.Lease.ID}, got[len(want):len(want)+2])
		require.Equal(t, []string{"license.deleted " + lic.ID}, got[len(want)+2:])

		ids := map[string]bool{}
		for _, e := range es {
			require.False(t, ids[e.ID], "event ids are unique")
			ids[e.ID] = true
			require.Regexp(t, `^evt_[0-9a-f]{24}$`, e.ID)
			require.False(t, e.At.IsZero())
			d := eventData(t, e)
			switch e.Type {
			case server.EventLeaseExpired:
				require.NotNil(t, d.Lease)
				require.Equal(t, short.ID, e.LicenseID)
				require.Equal(t, short.ID, d.Lease.LicenseID)
				require.Equal(t, server.LeaseExpired, d.Lease.State)
				require.WithinDuration(t, zombieHB.LastHeartbeatAt, d.Lease.LastHeartbeatAt, timeSlack,
					"lease.expired carries the zombie's last heartbeat")
				require.Equal(t, "zombie", zombie.Lease.Fingerprint)
			case server.EventLeaseRevoked:
				require.NotNil(t, d.Lease)
				require.Equal(t, server.LeaseRevoked, d.Lease.State)
				require.Equal(t, lic.ID, d.Lease.LicenseID)
				require.False(t, d.Lease.EndedAt.IsZero())
			case server.EventLeaseBorrowed:
				require.NotNil(t, d.Lease)
				require.True(t, d.Lease.Borrowed)
				require.WithinDuration(t, bor.Lease.ExpiresAt, d.Lease.ExpiresAt, timeSlack)
			case server.EventLicenseUpdated:
				require.Equal(t, 6, d.License.Seats, "the license as updated")
				require.Equal(t, server.ChangeSettings, d.Change, "UpdateLicense changed its settings")
			case server.EventLicenseCreated, server.EventLicenseDeleted:
				require.NotNil(t, d.License)
				require.Equal(t, e.SubjectID, d.License.ID)
			case server.EventAPIKeyRevoked:
				require.Equal(t, key.ID, d.APIKey.ID)
				require.Equal(t, "ci", d.APIKey.Name)
				require.False(t, d.APIKey.RevokedAt.IsZero())
				require.Empty(t, e.LicenseID)
			}
		}
	})

	w.run("FailedChangeWritesNone", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		fs := faultsOf(t, s)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(3), leaseTTL(lapsingTTL(s)), borrowing(time.Hour, 0)))
		r, _ := acquire(t, s, lic, "a", nil)
		passDeadlines(t, s, r.Lease)
		refs, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		key := server.APIKey{
			ID: server.NewID(server.PrefixAPIKeyID), TenantID: tn.ID,
			SecretHash: server.HashSecret(server.NewSecret(server.PrefixAPISecret)), CreatedAt: now(),
		}
		_, err = s.CreateAPIKey(t.Context(), key)
		require.NoError(t, err)
		before := named(eventsOf(t, hooks, tn.ID))

		withFault(t, fs, FaultRecord, func() {
			_, err := s.CreateLicense(t.Context(), licenseFor(tn.ID, nil))
			requireUnavailable(t, err, "CreateLicense")
			_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats = 9; return nil })
			requireUnavailable(t, err, "UpdateLicense")
			_, err = s.ExpireLeases(t.Context(), refs)
			requireUnavailable(t, err, "ExpireLeases")
			_, err = s.RevokeAPIKey(t.Context(), key.ID)
			requireUnavailable(t, err, "RevokeAPIKey")
			_, err = s.DeleteLicense(t.Context(), tn.ID, lic.ID)
			requireUnavailable(t, err, "DeleteLicense")
			_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop", borrowFor(time.Hour))
			require.Error(t, err, "a borrow the record refused")
			_, err = hooks.AppendEvent(t.Context(), server.NewEvent(server.EventLicensePeak, now(), tn.ID, lic.ID, lic.ID, "peak-1", server.EventData{}))
			requireUnavailable(t, err, "AppendEvent")
		})
		require.Equal(t, before, named(eventsOf(t, hooks, tn.ID)), "no event of a change that failed")

		// And the same changes, now written, write one each.
		_, err = s.ExpireLeases(t.Context(), refs)
		require.NoError(t, err)
		_, err = s.RevokeAPIKey(t.Context(), key.ID)
		require.NoError(t, err)
		require.Equal(t, append(before, "lease.expired "+r.Lease.ID, "apikey.revoked "+key.ID), named(eventsOf(t, hooks, tn.ID)))
	})

	// The chaos property's kernel: revocations racing each other and two
	// cleaners racing them leave every revoked or expired lease of the
	// record with exactly one event of its end, and no other.
	w.run("EveryEndedLeaseHasExactlyOneEvent", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(20), leaseTTL(lapsingTTL(s))))
		var leases []server.Lease
		for i := range 12 {
			r, _ := acquire(t, s, lic, fmt.Sprintf("c-%d", i), nil)
			leases = append(leases, r.Lease)
		}
		var wg sync.WaitGroup
		revoke := func(ls []server.Lease) {
			for _, l := range ls {
				wg.Go(func() { _, _ = s.Revoke(t.Context(), tn.ID, l.ID) })
				wg.Go(func() { _, _ = s.Revoke(t.Context(), tn.ID, l.ID) })
			}
		}
		revoke(leases[:4])
		wg.Wait()
		passDeadlines(t, s, leases...)
		revoke(leases[4:7]) // past their deadlines: racing the cleaners
		for range 2 {
			wg.Go(func() {
				refs, err := s.DueLeases(t.Context(), nil, 100)
				if err == nil {
					_, _ = s.ExpireLeases(t.Context(), refs)
				}
			})
		}
		wg.Wait()
		refs, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		_, err = s.ExpireLeases(t.Context(), refs)
		require.NoError(t, err)

		ended := map[string]server.LeaseState{}
		for _, st := range []server.LeaseState{server.LeaseRevoked, server.LeaseExpired} {
			ls, _, err := s.ListLeases(t.Context(), tn.ID, lic.ID, st, server.Page{Size: 100})
			require.NoError(t, err)
			for _, l := range ls {
				ended[l.ID] = st
			}
		}
		require.Len(t, ended, len(leases), "every lease ended")
		events := map[string][]server.EventType{}
		for _, e := range eventsOf(t, hooks, tn.ID) {
			if e.Type == server.EventLeaseRevoked || e.Type == server.EventLeaseExpired {
				events[e.SubjectID] = append(events[e.SubjectID], e.Type)
			}
		}
		require.Len(t, events, len(ended), "no event of a lease that did not end")
		for id, st := range ended {
			want := server.EventLeaseRevoked
			if st == server.LeaseExpired {
				want = server.EventLeaseExpired
			}
			require.Equal(t, []server.EventType{want}, events[id], "lease %s ended %s", id, st)
		}
	})

	// Issue 29: a change of a license's feature grants or of its site
	// policy is a license.updated event too, saying what changed, written
	// with the change (none for a change refused or failed).
	w.run("GrantAndPolicyChangesAreLicenseUpdated", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		fs := faultsOf(t, s)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(5), leaseTTL(3*longTTL)))
		g := newGrant(t, s, lic, "render", grantWith(grantSeats(2), grantVersion("2025")))
		_, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 3; return nil })
		require.NoError(t, err)
		held, _ := acquireFeature(t, s, lic, g, "render-1", "", nil)
		_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(*server.Grant) error { return server.Invalid("grant.seats", "no") })
		require.Error(t, err, "a change the caller refused")
		rule := maxRule("", 2, userS("ann"))
		setPolicy(t, s, lic, rule)
		withFault(t, fs, FaultRecord, func() {
			_, err := s.CreateGrant(t.Context(), grantFor(lic, "sim", nil))
			require.Error(t, err, "CreateGrant")
			_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 4; return nil })
			require.Error(t, err, "UpdateGrant")
			_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
			require.Error(t, err, "DeleteGrant")
			_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
			require.Error(t, err, "SetPolicy")
		})
		n, err := s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
		require.NoError(t, err)

		es := eventsOf(t, hooks, tn.ID)
		updated := "license.updated " + lic.ID
		require.Equal(t, []string{"license.created " + lic.ID, updated, updated, updated,
			"lease.revoked " + held.Lease.ID, updated, updated}, named(es),
			"one event per change, the grant's leases revoked before its deletion's")
		type change struct {
			Change      server.LicenseChange
			Grant       string
			GrantSeats  int
			PolicyRules int
		}
		var got []change
		for _, e := range es {
			if e.Type != server.EventLicenseUpdated {
				continue
			}
			d := eventData(t, e)
			require.NotNil(t, d.License)
			require.Equal(t, lic.ID, d.License.ID)
			require.Equal(t, 5, d.License.Seats, "the license as it is")
			c := change{Change: d.Change, PolicyRules: d.License.PolicyRules}
			if d.Grant != nil {
				c.Grant, c.GrantSeats = d.Grant.ID, d.Grant.Seats
				require.Equal(t, "render", d.Grant.Feature)
				require.Equal(t, "2025", d.Grant.Version)
			}
			got = append(got, c)
		}
		require.Equal(t, []change{
			{Change: server.ChangeGrantCreated, Grant: g.ID, GrantSeats: 2},
			{Change: server.ChangeGrantUpdated, Grant: g.ID, GrantSeats: 3},
			{Change: server.ChangePolicy, PolicyRules: 1},
			{Change: server.ChangeGrantDeleted, Grant: g.ID, GrantSeats: 3, PolicyRules: 1},
			{Change: server.ChangePolicy},
		}, got)
	})

	w.run("AppendEventDedupes", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		d := server.EventData{Seats: &server.EventSeats{PoolID: lic.ID, Limit: 1, InUse: 1}}
		for i := range 3 {
			e := server.NewEvent(server.EventLicenseExhausted, now(), tn.ID, lic.ID, lic.ID, "exhausted:"+lic.ID+":w1", d)
			written, err := hooks.AppendEvent(t.Context(), e)
			require.NoError(t, err)
			require.Equal(t, i == 0, written, "the first of one dedupe key is written, the others not")
		}
		written, err := hooks.AppendEvent(t.Context(), server.NewEvent(server.EventLicenseExhausted, now(), tn.ID, lic.ID, lic.ID, "exhausted:"+lic.ID+":w2", d))
		require.NoError(t, err)
		require.True(t, written, "another window")
		es := eventsOf(t, hooks, tn.ID)
		require.Equal(t, []string{"license.created " + lic.ID, "license.exhausted " + lic.ID, "license.exhausted " + lic.ID}, named(es))
		require.Equal(t, 1, eventData(t, es[1]).Seats.InUse)
	})

	w.run("DeliveriesKeepTheirOrderPerLicense", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		tn := newTenant(t, s)
		other := newTenant(t, s)
		at := now()
		mk := func(tenantID string, types ...server.EventType) server.Endpoint {
			ep, err := hooks.CreateEndpoint(t.Context(), server.Endpoint{
				ID: server.NewID("whe_"), TenantID: tenantID, URL: "https://hooks.example.com/seatd",
				Types: types, Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, CreatedAt: at, UpdatedAt: at,
			})
			require.NoError(t, err)
			return ep
		}
		all := mk(tn.ID)
		onlyLeases := mk(tn.ID, server.EventLeaseRevoked)
		mk(other.ID) // another tenant's: sent none of tn's events
		_, err := hooks.CreateEndpoint(t.Context(), server.Endpoint{ID: server.NewID("whe_"), TenantID: "tnt_missing", URL: "https://x.example", Secrets: []string{"whsec_x"}, CreatedAt: at, UpdatedAt: at})
		require.ErrorIs(t, err, server.ErrTenantNotFound)
		got, err := hooks.GetEndpoint(t.Context(), tn.ID, all.ID)
		require.NoError(t, err)
		require.Equal(t, all.Secrets, got.Secrets)
		_, err = hooks.GetEndpoint(t.Context(), other.ID, all.ID)
		require.ErrorIs(t, err, server.ErrEndpointNotFound, "another tenant's endpoint")

		a := newLicense(t, s, tn.ID, seats(3))
		b := newLicense(t, s, tn.ID, seats(3))
		ra, _ := acquire(t, s, a, "a", nil)
		_, err = s.Revoke(t.Context(), tn.ID, ra.Lease.ID)
		require.NoError(t, err)

		// Fan out everything there is (other tests' tenants too, where the
		// backend shares its outbox).
		tick := time.Now().UTC().Truncate(time.Millisecond)
		for {
			n, err := hooks.FanOut(t.Context(), tick, 50)
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		mine := func(ds []server.Delivery) []server.Delivery {
			var out []server.Delivery
			for _, d := range ds {
				if d.TenantID == tn.ID {
					out = append(out, d)
				}
			}
			return out
		}
		due, err := hooks.DueDeliveries(t.Context(), tick, 1000)
		require.NoError(t, err)
		// Heads of their lines only: a's created (then its revoke waits), b's created;
		// onlyLeases: a's revoke.
		heads := map[string]string{}
		for _, d := range mine(due) {
			heads[d.EndpointID+" "+d.OrderKey] = string(d.Event.Type)
			require.Equal(t, int64(1), d.Seq, "the first of each line")
			require.Equal(t, server.DeliveryPending, d.State)
		}
		require.Equal(t, map[string]string{
			all.ID + " " + a.ID: "license.created", all.ID + " " + b.ID: "license.created",
			onlyLeases.ID + " " + a.ID: "lease.revoked",
		}, heads)

		var first server.Delivery
		for _, d := range mine(due) {
			if d.EndpointID == all.ID && d.OrderKey == a.ID {
				first = d
			}
		}
		// It fails: retried later; the revoke of a still waits behind it.
		later := tick.Add(time.Minute)
		failed, err := hooks.RecordAttempt(t.Context(), first.ID, server.Attempt{
			At: tick, Status: 503, Error: "503 Service Unavailable", Latency: 12 * time.Millisecond,
			Next: server.DeliveryPending, NextAt: later,
		})
		require.NoError(t, err)
		require.Equal(t, 1, failed.Attempts)
		require.Equal(t, 503, failed.LastStatus)
		due, err = hooks.DueDeliveries(t.Context(), tick, 1000)
		require.NoError(t, err)
		for _, d := range mine(due) {
			require.False(t, d.EndpointID == all.ID && d.OrderKey == a.ID, "a's line waits for its first delivery's retry")
		}
		due, err = hooks.DueDeliveries(t.Context(), later, 1000)
		require.NoError(t, err)
		require.Contains(t, ids(mine(due)), first.ID, "due again at its retry")
		ok, err := hooks.RecordAttempt(t.Context(), first.ID, server.Attempt{At: later, Status: 204, Next: server.DeliveryDelivered})
		require.NoError(t, err)
		require.Equal(t, server.DeliveryDelivered, ok.State)
		require.Equal(t, 2, ok.Attempts)
		_, err = hooks.RecordAttempt(t.Context(), first.ID, server.Attempt{At: later, Status: 204, Next: server.DeliveryDelivered})
		require.ErrorIs(t, err, server.ErrDeliveryNotFound, "a delivery no longer pending")

		due, err = hooks.DueDeliveries(t.Context(), later, 1000)
		require.NoError(t, err)
		var second server.Delivery
		for _, d := range mine(due) {
			if d.EndpointID == all.ID && d.OrderKey == a.ID {
				second = d
			}
		}
		require.Equal(t, server.EventLeaseRevoked, second.Event.Type, "then a's next event")
		require.Equal(t, int64(2), second.Seq)

		list, _, err := hooks.ListDeliveries(t.Context(), tn.ID, all.ID, server.Page{})
		require.NoError(t, err)
		require.Len(t, list, 3, "a created, a's lease revoked, b created")
		_, _, err = hooks.ListDeliveries(t.Context(), other.ID, all.ID, server.Page{})
		require.ErrorIs(t, err, server.ErrEndpointNotFound)

		// A replay sends the same event (same id, same sequence) again.
		re, err := hooks.ReplayDelivery(t.Context(), tn.ID, first.ID, later)
		require.NoError(t, err)
		require.Equal(t, server.DeliveryPending, re.State)
		require.Equal(t, first.Event.ID, re.Event.ID)
		require.Equal(t, first.Seq, re.Seq)
		_, err = hooks.ReplayDelivery(t.Context(), other.ID, first.ID, later)
		require.ErrorIs(t, err, server.ErrDeliveryNotFound)

		require.NoError(t, hooks.DeleteEndpoint(t.Context(), tn.ID, all.ID))
		require.ErrorIs(t, hooks.DeleteEndpoint(t.Context(), tn.ID, all.ID), server.ErrEndpointNotFound)
		due, err = hooks.DueDeliveries(t.Context(), later, 1000)
		require.NoError(t, err)
		for _, d := range due {
			require.NotEqual(t, all.ID, d.EndpointID, "a deleted endpoint's deliveries are gone")
		}
	})

	w.run("DisablingAnEndpointForFailingIsAnEvent", func(t *testing.T) {
		s := openStore(t, newBackend)
		hooks := webhooksOf(t, s)
		tn := newTenant(t, s)
		at := now()
		ep, err := hooks.CreateEndpoint(t.Context(), server.Endpoint{
			ID: server.NewID("whe_"), TenantID: tn.ID, URL: "https://hooks.example.com/x",
			Secrets: []string{"whsec_a"}, CreatedAt: at, UpdatedAt: at,
		})
		require.NoError(t, err)
		for i := range 2 {
			up, err := hooks.UpdateEndpoint(t.Context(), tn.ID, ep.ID, func(e *server.Endpoint) error {
				e.Disabled, e.DisabledReason = true, fmt.Sprintf("failing since %d", i)
				return nil
			})
			require.NoError(t, err)
			require.True(t, up.Disabled)
		}
		es := eventsOf(t, hooks, tn.ID)
		require.Equal(t, []string{"webhook_endpoint.disabled " + ep.ID}, named(es), "once, as it is disabled")
		require.Equal(t, "failing since 0", eventData(t, es[0]).Endpoint.Reason)
	})
}

// testWebhookRetention: retention removes delivered and failed deliveries
// and the events fanned out before the cutoff, never a delivery still
// pending (nor what it sends) nor an event not yet fanned out, and a
// line's next delivery still takes the next sequence number.
func testWebhookRetention(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	hooks := webhooksOf(t, s)
	tn := newTenant(t, s)
	old := now().Add(-48 * time.Hour)
	ep, err := hooks.CreateEndpoint(t.Context(), server.Endpoint{
		ID: server.NewID("whe_"), TenantID: tn.ID, URL: "https://hooks.example.com/retention",
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, CreatedAt: old, UpdatedAt: old,
	})
	require.NoError(t, err)
	prune := func(kind server.RecordKind, before time.Time, limit int) int {
		t.Helper()
		n, err := s.PruneRecords(t.Context(), kind, before, limit)
		require.NoError(t, err, "prune %s", kind)
		return n
	}
	appendAt := func(i int, at time.Time, dedupe string) server.Event {
		t.Helper()
		lic := fmt.Sprintf("lic_retention%d", i)
		e := server.NewEvent(server.EventLicensePeak, at, tn.ID, lic, lic, dedupe,
			server.EventData{Seats: &server.EventSeats{PoolID: lic, Limit: 10, InUse: 9, Share: 90}})
		written, err := hooks.AppendEvent(t.Context(), e)
		require.NoError(t, err)
		require.True(t, written)
		return e
	}
	fanOut := func(at time.Time) {
		t.Helper()
		for {
			n, err := hooks.FanOut(t.Context(), at, 50)
			require.NoError(t, err)
			if n == 0 {
				return
			}
		}
	}
	// e1 delivered, e2 failed, e3 still retrying, e4 delivered then
	// replayed and delivered again now; e5 not yet fanned out.
	e1 := appendAt(1, old, "peak:lic_retention1:1")
	e2 := appendAt(2, old.Add(time.Second), "")
	e3 := appendAt(3, old.Add(2*time.Second), "")
	e4 := appendAt(4, old.Add(3*time.Second), "")
	fanOut(old)
	e5 := appendAt(5, old.Add(4*time.Second), "")
	due, err := hooks.DueDeliveries(t.Context(), old, 100)
	require.NoError(t, err)
	require.Len(t, due, 4)
	byEvent := map[string]server.Delivery{}
	for _, d := range due {
		byEvent[d.Event.ID] = d
	}
	attempt := func(e server.Event, at time.Time, next server.DeliveryState, nextAt time.Time) {
		t.Helper()
		_, err := hooks.RecordAttempt(t.Context(), byEvent[e.ID].ID, server.Attempt{At: at, Status: 500, Next: next, NextAt: nextAt})
		require.NoError(t, err)
	}
	attempt(e1, old, server.DeliveryDelivered, time.Time{})
	attempt(e2, old, server.DeliveryFailed, time.Time{})
	attempt(e3, old, server.DeliveryPending, now().Add(time.Hour))
	attempt(e4, old, server.DeliveryDelivered, time.Time{})
	_, err = hooks.ReplayDelivery(t.Context(), tn.ID, byEvent[e4.ID].ID, now())
	require.NoError(t, err)
	attempt(e4, now(), server.DeliveryDelivered, time.Time{})

	for _, kind := range []server.RecordKind{server.RecordWebhookDeliveries, server.RecordWebhookEvents} {
		require.Zero(t, prune(kind, old.Add(-time.Hour), 100), "%s: a cutoff before everything removes nothing", kind)
	}
	cutoff := old.Add(time.Hour)
	require.Equal(t, 1, prune(server.RecordWebhookDeliveries, cutoff, 1), "a full batch")
	require.Equal(t, 1, prune(server.RecordWebhookDeliveries, cutoff, 100), "the rest: a short batch")
	require.Zero(t, prune(server.RecordWebhookDeliveries, cutoff, 100), "nothing left")
	require.NotZero(t, prune(server.RecordWebhookEvents, cutoff, 100))
	prune(server.RecordWebhookEvents, cutoff, 100)

	list, _, err := hooks.ListDeliveries(t.Context(), tn.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{byEvent[e3.ID].ID, byEvent[e4.ID].ID}, ids(list),
		"the delivered and the failed one are gone; the pending one and the one tried since stay")
	for _, e := range []server.Event{e1, e2} {
		_, err := hooks.GetDelivery(t.Context(), tn.ID, byEvent[e.ID].ID)
		require.ErrorIs(t, err, server.ErrDeliveryNotFound)
	}
	left := map[string]bool{}
	for _, e := range eventsOf(t, hooks, tn.ID) {
		left[e.ID] = true
	}
	require.False(t, left[e1.ID] || left[e2.ID], "their events went with them")
	require.True(t, left[e5.ID], "an event not yet fanned out is never removed")

	// The pending one still sends its event, whole.
	due, err = hooks.DueDeliveries(t.Context(), now().Add(2*time.Hour), 100)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, byEvent[e3.ID].ID, due[0].ID)
	require.Equal(t, e3.ID, due[0].Event.ID)
	require.JSONEq(t, string(e3.Data), string(due[0].Event.Data))

	// The next event of e1's line (license) takes the next number.
	e6 := appendAt(1, now(), "")
	fanOut(now())
	list, _, err = hooks.ListDeliveries(t.Context(), tn.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	seqs := map[string]int64{}
	for _, d := range list {
		seqs[d.Event.ID] = d.Seq
	}
	require.Equal(t, int64(2), seqs[e6.ID], "a line's sequence never goes back")
	require.Equal(t, int64(1), seqs[e5.ID])

	// A removed event's dedupe key goes with it (--retain-webhook-events
	// is at least as long as a key can recur: daemon config).
	written, err := hooks.AppendEvent(t.Context(), server.NewEvent(server.EventLicensePeak, now(), tn.ID, "lic_retention1", "lic_retention1", e1.DedupeKey, server.EventData{}))
	require.NoError(t, err)
	require.True(t, written)
}

func ids(ds []server.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}
