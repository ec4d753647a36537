package distributed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/seatd/seatd/server/distributed/record"

	"github.com/seatd/seatd/server"
)

// The live state of a license in Redis is built from PostgreSQL by
// rebuild, and only by rebuild: on first use, and whenever a script finds
// it missing (Redis restarted empty, or lost the keys). See doc.go.

// rebuildTimeout bounds a rebuild, which runs detached from the caller
// that triggered it (other callers may wait for the same rebuild).
const rebuildTimeout = 30 * time.Second

// ensureLive builds the live state of a license if it is missing or from
// an older epoch. ErrLicenseNotFound if the license does not exist or is
// deleted. Concurrent calls for one license in this process share one
// rebuild; across processes, the license row lock orders them.
func (s *Store) ensureLive(ctx context.Context, licenseID string) error {
	return s.runRebuild(ctx, licenseID, -1)
}

// rebuildFrom rebuilds the live state of a license even if it is current,
// provided it is still at the given epoch: it drops from Redis what
// PostgreSQL does not hold (a grant whose acquisition died before
// recording it), and bumping the epoch makes sure such a grant can no
// longer be recorded.
func (s *Store) rebuildFrom(ctx context.Context, licenseID string, epoch int64) error {
	return s.runRebuild(ctx, licenseID, epoch)
}

func (s *Store) runRebuild(ctx context.Context, licenseID string, forceAt int64) error {
	key := licenseID
	if forceAt >= 0 {
		key = fmt.Sprintf("%s@%d", licenseID, forceAt)
	}
	ch := s.rebuilds.DoChan(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebuildTimeout)
		defer cancel()
		return nil, s.rebuild(ctx, licenseID, forceAt)
	})
	select {
	case <-ctx.Done():
		return server.Unavailable(ctx.Err())
	case r := <-ch:
		return r.Err
	}
}

// rebuild builds the live state of a license from PostgreSQL if it is
// missing or from another epoch, or if it is at epoch forceAt (>= 0).
func (s *Store) rebuild(ctx context.Context, licenseID string, forceAt int64) error {
	// Newer heartbeats of this process into the record first (best effort:
	// the deadline slack below covers what is not there).
	if err := s.flush(ctx); err != nil {
		s.log.Warn("distributed store: flush before rebuild", "err", err)
	}
	keys := s.keys.liveKeys(licenseID)
	var (
		snapshot    int64  // Redis time before the sessions were read
		incarnation string // of the license's keys then (state.lua)
		staleConf   bool   // the live state is current, its settings are not
	)
	snap, err := s.rec.RebuildSnapshot(ctx, licenseID, func(lic record.LicenseRow) (bool, error) {
		st, err := scriptState.Run(ctx, s.rdb, keys, server.NewID("inc")).Slice()
		if err != nil {
			return false, err
		}
		snapshot, incarnation = num(st[3]), str(st[4])
		if e := str(st[0]); e != "" && str(st[1]) != "1" {
			if n, _ := strconv.ParseInt(e, 10, 64); n == lic.Epoch && n != forceAt {
				staleConf = num(st[2]) < lic.Version
				return true, nil // another rebuild finished first
			}
		}
		return false, nil
	})
	lic, epoch, sessions := snap.License, snap.Epoch, snap.Sessions
	if errors.Is(err, record.ErrDeleted) {
		if err := scriptTombstone.Run(ctx, s.rdb, keys, lic.Version, lic.TenantID).Err(); err != nil {
			return fmt.Errorf("tombstone deleted license: %w", err)
		}
		return server.ErrLicenseNotFound
	}
	if err != nil {
		return err
	}
	current := epoch == 0
	if current {
		if staleConf {
			s.pushConf(ctx, lic)
		}
		return nil
	}

	// A lease's recorded deadline may trail its real one by the heartbeats
	// not yet written behind: when Redis lost the license's state, every
	// lease it no longer holds gets that slack, so that no client still
	// heartbeating loses its seat to the loss of Redis (rebuild.lua).
	slack := server.WriteBehindSlack(s.flushEvery, &lic.License).Microseconds()
	args := append([]any{epoch, lic.Version}, confArgs(lic)...)
	args = append(args, snapshot, slack, incarnation)
	for _, l := range sessions {
		args = append(args, l.ID, l.TokenHash, timeUS(l.AcquiredAt), timeUS(l.LastHeartbeatAt),
			timeUS(l.ExpiresAt), l.DedupeKey, l.IdempotencyKey, l.TokenSeq)
	}
	res, err := scriptRebuild.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return fmt.Errorf("write live state: %w", err)
	}
	if str(res[0]) == "STALE" {
		return errors.New("write live state: the snapshot of the record took too long to reach Redis, or Redis lost the license's keys meanwhile")
	}
	if str(res[0]) == "OK" {
		s.lowerHint(ctx, licenseID, num(res[1]))
		level := slog.LevelDebug // a license's first use
		if epoch > 1 {
			level = slog.LevelWarn // Redis lost the license's live state
			s.liveRebuilds.Add(1)
		}
		s.log.Log(ctx, level, "distributed store: built live state of license from PostgreSQL",
			"license", licenseID, "epoch", epoch, "leases", len(sessions))
	}
	// A change committed after our read found no live state to update
	// (setconf.lua never creates one): bring the settings up to date now.
	// A change committed after this read updates them itself.
	now, err := s.rec.License(ctx, licenseID)
	switch {
	case err != nil:
		return fmt.Errorf("re-read license: %w", err)
	case now.Deleted:
		if err := scriptTombstone.Run(ctx, s.rdb, keys, now.Version, now.TenantID).Err(); err != nil {
			return fmt.Errorf("tombstone deleted license: %w", err)
		}
		return server.ErrLicenseNotFound
	case now.Version > lic.Version:
		s.pushConf(ctx, now)
	}
	return nil
}

// liveVals are the values of a lease that Redis holds newer than the record.
type liveVals struct {
	tokenHash    string
	hb, deadline time.Time
	expiring     bool // taken out of the live state, expiry not yet recorded
}

// peek reads the live values of leases of a license (all of them when ids
// is empty), and the store's time. If Redis lost the license's live state,
// it is rebuilt first: the values read are then the ones Redis enforces
// (a rebuild gives leases the write-behind's slack), not the record's,
// which trail the heartbeats acknowledged since the last flush. A license
// that no longer exists holds no live values.
func (s *Store) peek(ctx context.Context, licenseID string, ids ...string) (map[string]liveVals, time.Time, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	var res []any
	for attempt := 0; ; attempt++ {
		var err error
		res, err = scriptPeek.Run(ctx, s.rdb, s.keys.license(licenseID), args...).Slice()
		if err != nil {
			return nil, time.Time{}, err
		}
		if num(res[1]) == 1 || attempt == maxAttempts {
			break
		}
		if err := s.ensureLive(ctx, licenseID); server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return map[string]liveVals{}, usTime(num(res[0])), nil
		} else if err != nil {
			return nil, time.Time{}, err
		}
	}
	out := make(map[string]liveVals, (len(res)-2)/5)
	for i := 2; i+4 < len(res); i += 5 {
		out[str(res[i])] = liveVals{
			tokenHash: str(res[i+2]),
			hb:        usTime(num(res[i+3])),
			deadline:  usTime(num(res[i+4])),
			expiring:  str(res[i+1]) == "X",
		}
	}
	return out, usTime(num(res[0])), nil
}

func (s *Store) peekAll(ctx context.Context, licenseID string) (map[string]liveVals, time.Time, error) {
	return s.peek(ctx, licenseID)
}

// overlay puts the live values of an active lease over its record.
func overlay(l server.Lease, v liveVals) server.Lease {
	if l.State != server.LeaseActive {
		return l
	}
	l.TokenHash = v.tokenHash
	if v.hb.After(l.LastHeartbeatAt) {
		l.LastHeartbeatAt = v.hb
	}
	l.ExpiresAt = v.deadline
	return l
}

// lowerHint records that a license holds a lease due at dl (unix µs; a
// negative dl is none). A failure is logged: DueLeases re-derives lost
// hints from PostgreSQL.
func (s *Store) lowerHint(ctx context.Context, licenseID string, dl int64) {
	if dl < 0 {
		return
	}
	if err := scriptHint.Run(ctx, s.rdb, s.keys.expiryOf(licenseID), licenseID, dl).Err(); err != nil {
		s.log.Warn("distributed store: lower expiry hint", "license", licenseID, "err", err)
	}
}

// Script replies are arrays of strings and integers.

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// anys converts ids to script arguments.
func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
