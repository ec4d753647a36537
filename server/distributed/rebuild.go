package distributed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Loss -> rebuild. The live state of a license in Redis is built from the
// record by rebuild, and only by rebuild: on first use, and whenever a
// script finds it missing (Redis restarted empty, or lost the keys). See
// doc.go.

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

// defaultRebuildStale is how long a rebuild that has begun writing may
// make no progress before another instance takes it for dead and rebuilds
// itself. A live one writes a chunk every few milliseconds
// (live.Redis.Rebuild).
const defaultRebuildStale = 5 * time.Second

// snapshotLimit is how long a rebuild may take from its claim to its first
// write (reading its snapshot: seconds for hundreds of thousands of
// leases) before it is taken for dead: the age rebuild.lua allows a
// snapshot (REBUILD_MAX_AGE), past which it could not write anyway.
const snapshotLimit = 30 * time.Second

// underWay reports whether a rebuild of the license is under way and
// alive: one reading its snapshot, for up to snapshotLimit; one writing,
// as long as it makes progress at least every s.rebuildStale.
func (s *Store) underWay(st live.State) bool {
	if st.Rebuilding < 0 {
		return false
	}
	if st.Writing {
		return st.Progress < s.rebuildStale
	}
	return st.Progress < snapshotLimit
}

// rebuildPoll is how often a caller waiting for another instance's
// rebuild looks at its progress.
const rebuildPoll = 20 * time.Millisecond

// errRebuildUnderWay: another rebuild of the license is under way (maybe
// in another instance); wait for it instead of reading a snapshot too.
var errRebuildUnderWay = errors.New("a rebuild of the license is under way")

// rebuild builds the live state of a license from PostgreSQL if it is
// missing or from another epoch, or if it is at epoch forceAt (>= 0). A
// rebuild under way elsewhere is waited for; a snapshot Redis refused as
// too old, or a rebuild a newer one took over, is tried again, until ctx
// ends.
func (s *Store) rebuild(ctx context.Context, licenseID string, forceAt int64) error {
	// Newer heartbeats of this process into the record first (best effort:
	// the deadline slack below covers what is not there).
	if err := s.flush(ctx); err != nil {
		s.log.Warn("distributed store: flush before rebuild", "err", err)
	}
	for {
		err := s.rebuildOnce(ctx, licenseID, forceAt)
		switch {
		case errors.Is(err, errRebuildUnderWay), errors.Is(err, live.ErrSuperseded):
			err = s.awaitRebuild(ctx, licenseID)
		case errors.Is(err, live.ErrStale):
			s.log.Warn("distributed store: Redis refused a rebuild's snapshot (too old, or Redis lost the keys meanwhile); reading a new one",
				"license", licenseID)
			err = sleep(ctx, rebuildPoll)
		default:
			return err
		}
		if err != nil {
			return err
		}
	}
}

// awaitRebuild waits until no rebuild of the license is under way, or
// the one under way has stopped making progress.
func (s *Store) awaitRebuild(ctx context.Context, licenseID string) error {
	for {
		st, err := s.live.State(ctx, licenseID)
		if err != nil {
			return err
		}
		if !s.underWay(st) {
			return nil
		}
		if err := sleep(ctx, rebuildPoll); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return server.Unavailable(ctx.Err())
	case <-t.C:
		return nil
	}
}

// rebuildOnce reads a snapshot of the record and writes it into Redis
// (live.Redis.Rebuild), unless the live state is current or another
// rebuild is under way (errRebuildUnderWay).
func (s *Store) rebuildOnce(ctx context.Context, licenseID string, forceAt int64) error {
	var st live.State // read under the license's row lock, before the snapshot
	snap, err := s.rec.RebuildSnapshot(ctx, licenseID, func(lic record.LicenseRow) (current bool, err error) {
		if st, err = s.live.State(ctx, licenseID); err != nil {
			return false, err
		}
		// Another rebuild finished first, unless told to replace this one.
		if !st.Deleted && st.Epoch == lic.Epoch && st.Epoch != forceAt {
			return true, nil
		}
		// Another is under way at the record's epoch: the row lock
		// ordered it before this call, and it is alive.
		if st.Rebuilding == lic.Epoch && s.underWay(st) {
			return false, errRebuildUnderWay
		}
		// This one reads the snapshot of epoch + 1: the others wait for it.
		return false, s.live.Claim(ctx, licenseID, lic.Epoch+1)
	})
	lic := snap.License
	if errors.Is(err, record.ErrDeleted) {
		if err := s.live.Tombstone(ctx, licenseID, lic.Version, lic.TenantID); err != nil {
			return fmt.Errorf("tombstone deleted license: %w", err)
		}
		return server.ErrLicenseNotFound
	}
	if err != nil {
		return err
	}
	if snap.Epoch == 0 { // current
		if st.Version < lic.Version {
			s.pushConf(ctx, lic)
		}
		return nil
	}

	// A lease's recorded deadline may trail its real one by the heartbeats
	// not yet written behind: when Redis lost the license's state, every
	// lease it no longer holds gets that slack, so that no client still
	// heartbeating loses its seat to the loss of Redis (rebuild.lua).
	b := live.Build{
		Epoch: snap.Epoch, Conf: confOf(lic), Snapshot: st.Now, Incarnation: st.Incarnation,
		Slack:  server.WriteBehindSlack(s.flushEvery, &lic.License),
		Leases: make([]live.Lease, len(snap.Sessions)),
	}
	for i, r := range snap.Sessions {
		b.Leases[i] = liveLease(r)
	}
	for _, r := range snap.Returned {
		b.Returned = append(b.Returned, live.Returned{LeaseID: r.LeaseID, Deadline: r.ExpiresAt})
	}
	built, first, err := s.live.Rebuild(ctx, licenseID, b)
	if err != nil {
		// The last call may have run although its answer was lost: the
		// settings are brought up to date all the same.
		if rerr := s.afterRebuild(ctx, licenseID, lic); rerr != nil {
			s.log.Warn("distributed store: after a failed rebuild", "license", licenseID, "err", rerr)
		}
		return err
	}
	if built {
		s.live.LowerHint(ctx, licenseID, first)
		level := slog.LevelDebug // a license's first use
		if snap.Epoch > 1 {
			level = slog.LevelWarn // Redis lost the license's live state
			s.liveRebuilds.Add(1)
		}
		s.log.Log(ctx, level, "distributed store: built live state of license from PostgreSQL",
			"license", licenseID, "epoch", snap.Epoch, "leases", len(snap.Sessions))
	}
	return s.afterRebuild(ctx, licenseID, lic)
}

// afterRebuild brings the settings a rebuild wrote (those of lic) up to
// date: a change committed after its snapshot found no live state to
// update (setconf.lua never creates one), and a delete must tombstone it.
// A change committed after this read updates them itself.
func (s *Store) afterRebuild(ctx context.Context, licenseID string, lic record.LicenseRow) error {
	now, err := s.rec.License(ctx, licenseID)
	switch {
	case err != nil:
		return fmt.Errorf("re-read license: %w", err)
	case now.Deleted:
		if err := s.live.Tombstone(ctx, licenseID, now.Version, now.TenantID); err != nil {
			return fmt.Errorf("tombstone deleted license: %w", err)
		}
		return server.ErrLicenseNotFound
	case now.Version > lic.Version:
		s.pushConf(ctx, now)
	}
	return nil
}

// withLiveState runs call on a license's live state; when call finds the
// state missing (live.ErrNoState), it rebuilds it from the record and runs
// call again. ErrLicenseNotFound if the license does not exist (any more).
// The one "state lost -> rebuild -> retry" loop of every call that does
// not decide otherwise (acquire, heartbeat and release do, per status).
func (s *Store) withLiveState(ctx context.Context, licenseID string, call func() error) error {
	for range maxAttempts {
		err := call()
		if !errors.Is(err, live.ErrNoState) {
			return err
		}
		if err := s.ensureLive(ctx, licenseID); err != nil {
			return err
		}
	}
	return fmt.Errorf("license %s: live state kept changing", licenseID)
}

// liveLease is a recorded active lease as the live state takes it.
func liveLease(r record.Session) live.Lease {
	return live.Lease{ID: r.ID, TokenHash: r.TokenHash, Acquired: r.AcquiredAt, Heartbeat: r.LastHeartbeatAt,
		Deadline: r.ExpiresAt, DedupeKey: r.DedupeKey, IdempotencyKey: r.IdempotencyKey, TokenSeq: r.TokenSeq, Borrowed: r.Borrowed,
		Lingering: r.Lingering}
}

// confOf is a license's recorded settings as the live state takes them.
func confOf(r record.LicenseRow) live.Conf {
	return live.Conf{License: r.License, Version: r.Version, PolicyGen: r.PolicyGen, Linger: r.Linger}
}

// peek reads the live values of leases of a license (all of them when ids
// is empty), and the store's time. If Redis lost the license's live state,
// it is rebuilt first: the values read are then the ones Redis enforces
// (a rebuild gives leases the write-behind's slack), not the record's,
// which trail the heartbeats acknowledged since the last flush. A license
// that no longer exists holds no live values.
func (s *Store) peek(ctx context.Context, licenseID string, ids ...string) (map[string]live.Values, time.Time, error) {
	var (
		vals map[string]live.Values
		now  time.Time
	)
	err := s.withLiveState(ctx, licenseID, func() (err error) {
		vals, now, err = s.live.Peek(ctx, licenseID, ids...)
		return err
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return map[string]live.Values{}, now, nil
	}
	return vals, now, err
}

// overlay puts the live values of an active lease over its record.
func overlay(l server.Lease, v live.Values) server.Lease {
	if l.State != server.LeaseActive {
		return l
	}
	if v.Heartbeat.After(l.LastHeartbeatAt) {
		l.LastHeartbeatAt = v.Heartbeat
	}
	l.ExpiresAt = v.Deadline
	return l
}
