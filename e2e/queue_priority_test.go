package e2e

// WaitForSeat under a site policy's priorities (docs/concepts/policy.md,
// "Priorities"), end to end: the queue's order across instances, with a
// reservation in force.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestWaitForSeatPriorityWithReservations: 2 seats, 1 reserved for group
// night (held by nina); designers wait at level 10. Four waiters join over
// the instances, the designers last: each is told its place in the
// queue's order, and the shared seat that frees goes to the designers
// first, then to the others in the order they joined, whichever instance
// each waits on. Then, with the shared seat held again, a designer waits
// ahead of alice, night's: night's seat frees, the designer is refused it
// and stands aside, and alice behind him takes it; the next shared seat
// is the designer's. Distributed (two instances, the Redis queue) and
// embedded, one after the other as TestWaitForSeatFIFO runs.
func TestWaitForSeatPriorityWithReservations(t *testing.T) {
	t.Parallel()
	for _, distributed := range []bool{true, false} {
		name := map[bool]string{false: "embedded", true: "distributed"}[distributed]
		t.Run(name, func(t *testing.T) {
			procs := queueProcs(t, distributed, "--wait-poll", "50ms", "--wait-hold", "10m")
			on := func(i int) *proc { return procs[i%len(procs)] }
			p := procs[0]
			lic := newLicense(t, p, 2, time.Minute, "priority")
			ctx, cancel := callCtx(t.Context())
			defer cancel()
			for name, members := range map[string][]string{"night": {"alice", "nina"}, "designers": {"dave", "dora"}} {
				_, err := p.admin().PutGroup(p.asOperator(ctx), &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{
					Name: name, Kind: seatdv1.IdentityGroup_KIND_USERS, Members: members,
				}})
				require.NoError(t, err, "put group %s", name)
			}
			group := func(name string) *seatdv1.PolicySubject {
				return &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: name}
			}
			_, err := p.admin().SetLicensePolicy(p.asOperator(ctx), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{
				Rules:      []*seatdv1.PolicyRule{{Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 1, Subject: group("night")}},
				Priorities: []*seatdv1.PolicyPriority{{Subject: group("designers"), Level: 10}},
			}})
			require.NoError(t, err, "set the policy")
			seatAs := func(user string) *seatdv1.AcquireSeatResponse {
				resp, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: user, User: user, Hostname: "h"})
				require.NoError(t, err, "%s's seat", user)
				return resp
			}
			erin, nina := seatAs("erin"), seatAs("nina")

			var (
				mu     sync.Mutex
				order  []string
				issues []string
			)
			releasing := func(w *queuedWaiter, g *seatdv1.AcquireSeatResponse) {
				mu.Lock()
				order = append(order, w.name)
				mu.Unlock()
				if _, err := w.p.release(context.Background(), g); err != nil {
					mu.Lock()
					issues = append(issues, fmt.Sprintf("%s release: %v", w.name, err))
					mu.Unlock()
				}
			}
			waitAs := func(i int, fp, user string, onGrant func(*queuedWaiter, *seatdv1.AcquireSeatResponse)) *queuedWaiter {
				return resumeQueue(t, on(i), &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: fp, User: user, Hostname: "h"}, onGrant)
			}

			// Joins one after another: the place each is told as it joins.
			var waiters []*queuedWaiter
			for i, j := range []struct {
				user  string
				place int
			}{{"bob", 1}, {"carol", 2}, {"dave", 1}, {"dora", 2}} {
				w := waitAs(i, j.user, j.user, releasing)
				w.waitPosition(t, j.place, eventTimeout)
				require.Equal(t, [2]int{j.place, i + 1}, w.reported()[0], "%s: its place on joining, and the queue's length", j.user)
				waiters = append(waiters, w)
			}
			_, err = p.release(t.Context(), erin)
			require.NoError(t, err)
			for _, w := range waiters {
				require.NoError(t, w.end(t, eventTimeout), "%s ends with its grant", w.name)
				require.NotNil(t, w.grant(), "%s was granted a seat", w.name)
			}
			mu.Lock()
			require.Empty(t, issues)
			require.Equal(t, []string{"dave", "dora", "bob", "carol"}, order, "grants by level, then in join order")
			mu.Unlock()

			// The shared seat is taken again; a designer waits ahead of alice.
			erin = seatAs("erin")
			dave := waitAs(0, "dave-2", "dave", nil)
			dave.waitPosition(t, 1, eventTimeout)
			alice := waitAs(1, "alice", "alice", nil)
			alice.waitPosition(t, 2, eventTimeout)
			_, err = p.release(t.Context(), nina)
			require.NoError(t, err)
			require.NoError(t, alice.end(t, eventTimeout), "alice takes night's seat, behind the designer refused it")
			require.NotNil(t, alice.grant())
			require.False(t, dave.ended(), "the designer still waits")
			_, err = p.release(t.Context(), erin)
			require.NoError(t, err)
			require.NoError(t, dave.end(t, eventTimeout), "the next shared seat is the designer's")
			require.NotNil(t, dave.grant())
			require.Len(t, p.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), 2)
		})
	}
}
