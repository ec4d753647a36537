package distributed

import (
	"context"
	"errors"
	"fmt"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Heartbeat -> write-behind. A heartbeat renews the lease in the live state
// only; the new values reach the record with the next flush (flush.go).

func (s *Store) Heartbeat(ctx context.Context, leaseID, tokenHash string) (server.Lease, error) {
	info, err := s.leaseInfoOf(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	for range maxAttempts {
		b, err := s.live.Heartbeat(ctx, info.LicenseID, leaseID, tokenHash)
		if err != nil {
			return server.Lease{}, s.fail("heartbeat", err)
		}
		if b.Status == live.StatusJudgeRevival { // policy.go
			if b, err = s.revive(ctx, info, leaseID, tokenHash); err != nil {
				return server.Lease{}, err
			}
		}
		if b.Status == live.StatusRenewed {
			s.hb.add(leaseID, b.Heartbeat, b.Deadline)
			s.live.NoteDeadline(ctx, info.LicenseID, b.PrevFirst, b.Deadline)
			return info.lease(leaseID, tokenHash, b.Heartbeat, b.Deadline), nil
		}
		if retry, err := s.heartbeatRefused(ctx, info.LicenseID, leaseID, tokenHash, b.Status); !retry {
			return server.Lease{}, err
		}
	}
	return server.Lease{}, s.fail("heartbeat", errors.New("live state kept changing; giving up"))
}

// heartbeatRefused handles heartbeat.lua's answers other than a renewal:
// the error for the caller, or retry: the live state changed under the call, judge it anew.
func (s *Store) heartbeatRefused(ctx context.Context, licenseID, leaseID, tokenHash string, status live.Status) (retry bool, err error) {
	switch status {
	case live.StatusNoState:
		err := s.ensureLive(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return false, s.endedError(ctx, leaseID, tokenHash)
		}
		if err != nil {
			return false, s.fail("heartbeat: build live state", err)
		}
		return true, nil
	case live.StatusDeleted, live.StatusNoLease:
		return false, s.endedError(ctx, leaseID, tokenHash)
	case live.StatusWrongToken:
		return false, server.ErrLeaseToken
	case live.StatusBorrowed:
		return false, server.ErrLeaseBorrowed
	case live.StatusReleased: // lingering (server/linger.go): nothing changes
		return false, server.ErrLeaseReleased
	case live.StatusExpired:
		return s.observeExpiry(ctx, licenseID, leaseID)
	case live.StatusInactive:
		return false, server.ErrLicenseInactive
	case live.StatusLicenseExpired:
		return false, server.ErrLicenseExpired
	default:
		return false, s.fail("heartbeat", fmt.Errorf("unexpected script reply %q", status))
	}
}
