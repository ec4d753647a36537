package server

import "time"

// Lingering seats (Policy.Linger, FlexNet LINGER): a release of a lease of
// a pool whose license's policy has a linger for the pool's feature does
// not end the lease. It lingers (Lease.Lingering): it keeps its seat, and
// counts under the policy's caps and its reservation, until the release
// + the linger (its new deadline, later or earlier than the one it had);
// the same client acquiring again (the lease's idempotency or dedupe key,
// as any lease is handed back: LeaseStore.Acquire) takes it back as an
// active lease with a new deadline and token, audited "lease.reclaim";
// anyone else waits for the linger to lapse, when the lease ends as
// released (one usage event, to the end of its linger; no cleanup event:
// it is no zombie). Its heartbeats are answered ErrLeaseReleased and
// change nothing; a release of it answers the lease unchanged; a revoke
// ends it at once. A borrowed lease never lingers (its release is an
// early return). The linger is the one in force at the release; a policy
// change never ends or shortens a linger under way.

// AuditLeaseReclaim is the action of the audit entry a store writes (actor
// "system") when a lingering lease is taken back by its client.
const AuditLeaseReclaim = "lease.reclaim"

// LingerFor is how long a released seat of the feature ("": the base
// pool) lingers under the policy: 0 for none (nil policy, no linger of
// the feature, or a linger of 0).
func (p *Policy) LingerFor(feature string) time.Duration {
	if p == nil {
		return 0
	}
	for _, lg := range p.Linger {
		if lg.Feature == feature {
			return max(lg.Duration, 0)
		}
	}
	return 0
}
