package live

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// The live state of a license is created only by Rebuild, from the record;
// SetConf updates the settings of a state that exists, Tombstone marks a
// deleted license.

// Conf is a license's settings as the live state holds them.
type Conf struct {
	License server.License
	Version int64 // the record's settings version
	// PolicyGen is the generation of the site policy of the pool's
	// license (0: none): the settings say it ('policy'), and hold the
	// revival window negated, so that heartbeat.lua leaves the revival of
	// a lapsed lease to revive.lua, which judges it by the policy.
	PolicyGen int64
	// Linger is how long a released seat of the pool lingers under the
	// license's site policy (server/linger.go; 0: none): check.lua judges
	// a release by it, in the same step as the lease's liveness.
	Linger time.Duration
}

// args are the settings as the scripts take them (after the version):
// seats, overdraft, ttl, revival, active, expires, strategy, tenant, json,
// max borrow duration, max borrowed seats, starts (a grant's pool),
// policy generation (” none), linger (µs).
func (c Conf) args(to []any) []any {
	l := &c.License
	revival, policy := l.RevivalWindow.Microseconds(), ""
	if c.PolicyGen > 0 {
		revival, policy = -revival, strconv.FormatInt(c.PolicyGen, 10)
	}
	active := 0
	if l.Active {
		active = 1
	}
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = timeUS(l.ExpiresAt)
	}
	var starts int64
	if !l.StartsAt.IsZero() {
		starts = timeUS(l.StartsAt)
	}
	// The policy stays out of the license JSON, which acquisitions read
	// back: it can be large, and the caller judges by the record's.
	noPolicy := *l
	noPolicy.Policy = nil
	js, _ := json.Marshal(&noPolicy)
	return append(to, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(), revival, active, exp,
		string(l.LeasingStrategy), l.TenantID, string(js), l.MaxBorrowDuration.Microseconds(), l.MaxBorrowedSeats, starts,
		policy, c.Linger.Microseconds())
}

// State is what state.lua reads of a license's live state.
type State struct {
	Epoch       int64 // -1: no live state
	Deleted     bool
	Version     int64 // of its settings
	Now         time.Time
	Incarnation string // of the license's keys (a rebuild writes only into the same)
	// Rebuilding is the epoch of the rebuild under way (-1: none),
	// Progress how long ago it last made progress (rebuild.lua): a rebuild
	// that has made none for a while has died; Writing whether it has
	// begun writing, or is still reading its snapshot.
	Rebuilding int64
	Progress   time.Duration
	Writing    bool
}

// State reads the epoch, settings version and incarnation of a license's
// live state, the rebuild under way, and the time; it gives the license's
// keys an incarnation if they have none (state.lua).
func (rs *Redis) State(ctx context.Context, licenseID string) (State, error) {
	st, err := scriptState.Run(ctx, rs.rdb, rs.keys.RebuildKeys(licenseID), server.NewID("inc")).Slice()
	if err != nil {
		return State{}, err
	}
	s := State{Epoch: -1, Deleted: replyString(st[1]) == "1", Version: replyInt(st[2]), Now: usTime(replyInt(st[3])),
		Incarnation: replyString(st[4]), Rebuilding: -1, Progress: time.Duration(replyInt(st[6])) * time.Microsecond,
		Writing: replyInt(st[7]) == 1}
	if e := replyString(st[0]); e != "" {
		s.Epoch, _ = strconv.ParseInt(e, 10, 64)
	}
	if e := replyString(st[5]); e != "" {
		s.Rebuilding, _ = strconv.ParseInt(e, 10, 64)
	}
	return s, nil
}

// Claim notes that a rebuild of the license at epoch is about to read its
// snapshot, so that other instances wait for it rather than read their
// own (progress.lua). Call it under the license's row lock.
func (rs *Redis) Claim(ctx context.Context, licenseID string, epoch int64) error {
	return scriptProgress.Run(ctx, rs.rdb, rs.keys.RebuildKeys(licenseID), "claim", epoch).Err()
}

// Abandon says that the rebuild of the license at epoch gave up, so that
// the next one need not wait for it to look dead (progress.lua). Best
// effort: a rebuild that makes no progress looks dead after a while anyway.
func (rs *Redis) Abandon(ctx context.Context, licenseID string, epoch int64) {
	if err := scriptProgress.Run(ctx, rs.rdb, rs.keys.RebuildKeys(licenseID), "abandon", epoch).Err(); err != nil {
		rs.log.Warn("distributed store: mark an abandoned rebuild", "license", licenseID, "err", err)
	}
}

// Build is a snapshot of the record to build a license's live state from.
type Build struct {
	Epoch int64 // the new epoch
	Conf  Conf
	// Snapshot and Incarnation are State's Now and Incarnation, read
	// before the record: a snapshot older than 30 s, or read while the
	// keys had another incarnation, is refused.
	Snapshot    time.Time
	Incarnation string
	// Slack is added to the recorded deadlines of leases the live state
	// does not hold, when it lost the license's state: the heartbeats not
	// yet written behind.
	Slack  time.Duration
	Leases []Lease // the active sessions, by acquisition
	// Returned are the borrowed leases returned early whose deadline has
	// not passed: they count against the borrow cap until then.
	Returned []Returned
}

// Returned is a borrowed lease returned early, and its deadline.
type Returned struct {
	LeaseID  string
	Deadline time.Time
}

// ErrStale is Rebuild's answer for a snapshot it refused: too old, or read
// against keys Redis has lost since. Read a new one.
var ErrStale = errors.New("write live state: the snapshot of the record took too long to reach Redis, or Redis lost the license's keys meanwhile")

// ErrSuperseded is Rebuild's answer when a rebuild of a newer epoch began
// while this one was writing: that one builds the state.
var ErrSuperseded = errors.New("write live state: a newer rebuild of the license took over")

// DefaultRebuildChunk is how many leases one call of rebuild.lua writes,
// and how many of those whose deadline came during the rebuild its last
// calls give the time back.
// Rebuilding a 500,000-lease license on the quiet 2-core VM, a call of 100
// held Redis for 1.1 ms (median; p99 2.0 ms, longest 3.5 ms; 250 a call:
// 2.5, 5.2 and 8.2 ms), leaving room under the 10 ms that a busy machine's
// scheduling may stretch it towards; the whole rebuild took about as long
// either way (7.0 s against 6.1 s of calls).
const DefaultRebuildChunk = 100

// Rebuild writes a license's live state from a snapshot of the record,
// merged with what Redis still holds, in calls of rs.chunk leases
// (rebuild.lua): from the first call on, the license answers NOCONF
// (callers wait for the rebuild), and nothing counts until the last call
// switches the new state in (it is repeated while it answers MORE: leases
// whose deadline came while the license waited are given that time back,
// a chunk at a time). built is false when a state of the same or a
// newer epoch is there (another rebuild won) or the license is marked
// deleted; first is the earliest deadline now (unix µs, -1 if none). On
// ErrStale, ErrSuperseded or a failure the rebuild is abandoned: the
// license stays without a state until the next rebuild.
func (rs *Redis) Rebuild(ctx context.Context, licenseID string, b Build) (built bool, first int64, err error) {
	keys := rs.keys.RebuildKeys(licenseID)
	n := len(b.Leases)
	for start, first := 0, true; ; first = false {
		end := min(start+rs.chunk, n)
		flags := ""
		if first {
			flags = "F"
		}
		args := make([]any, 0, 19+9*(end-start))
		args = append(args, flags, b.Epoch, timeUS(b.Snapshot), b.Incarnation, b.Slack.Microseconds())
		if end == n {
			args[0] = flags + "L"
			args = append(args, 17+2*len(b.Returned), b.Conf.Version)
			args = append(b.Conf.args(args), rs.chunk, len(b.Returned))
			for _, r := range b.Returned {
				args = append(args, leaseKey(r.LeaseID), timeUS(r.Deadline))
			}
		} else {
			args = append(args, 0)
		}
		for _, l := range b.Leases[start:end] {
			args = l.args(args)
		}
		if rs.beforeChunk != nil {
			rs.beforeChunk(licenseID, start)
		}
		res, err := scriptRebuild.Run(ctx, rs.rdb, keys, args...).Slice()
		if err != nil {
			rs.Abandon(context.WithoutCancel(ctx), licenseID, b.Epoch)
			return false, 0, err
		}
		switch replyString(res[0]) {
		case "STAGED":
			start = end
		case "MORE": // the last call again, with no leases of its own
			start = n
		case "OK":
			return true, replyInt(res[1]), nil
		case "STALE":
			rs.Abandon(ctx, licenseID, b.Epoch)
			return false, 0, ErrStale
		case "SUPERSEDED":
			return false, 0, ErrSuperseded
		default: // SKIP: a state is there already, or a tombstone
			rs.Abandon(ctx, licenseID, b.Epoch)
			return false, -1, nil
		}
	}
}

// SetConf copies newer settings into a license's live state, if it exists
// (setconf.lua).
func (rs *Redis) SetConf(ctx context.Context, c Conf) error {
	args := c.args([]any{c.Version})
	return scriptSetConf.Run(ctx, rs.rdb, rs.keysOf(c.License.ID), args...).Err()
}

// Tombstone drops a deleted license's live state and marks its settings
// deleted with an epoch no rebuild can beat (tombstone.lua). The policy
// index of the license goes only with the license's own pool, never with
// a grant's (the other grants' live leases are in it).
func (rs *Redis) Tombstone(ctx context.Context, licenseID string, version int64, tenantID string) error {
	own := ""
	if !strings.Contains(licenseID, ".") {
		own = "1"
	}
	return scriptTombstone.Run(ctx, rs.rdb, rs.keys.RebuildKeys(licenseID), version, tenantID, own).Err()
}

// ConfVersion is the settings version a license's live state holds.
type ConfVersion struct {
	Present bool // a live state exists
	Version int64
	Deleted bool
}

// ConfVersions reads the settings version of many licenses' live states,
// a pipeline per 1000.
func (rs *Redis) ConfVersions(ctx context.Context, licenseIDs []string) ([]ConfVersion, error) {
	out := make([]ConfVersion, len(licenseIDs))
	for start := 0; start < len(licenseIDs); start += 1000 {
		end := min(start+1000, len(licenseIDs))
		pipe := rs.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, end-start)
		for i := start; i < end; i++ {
			cmds[i-start] = pipe.HMGet(ctx, rs.keysOf(licenseIDs[i])[0], "version", "deleted")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, c := range cmds {
			if v := c.Val(); len(v) >= 2 && v[0] != nil {
				out[start+i] = ConfVersion{Present: true, Version: replyInt(v[0]), Deleted: replyString(v[1]) == "1"}
			}
		}
	}
	return out, nil
}

// LicenseUsable is usable.lua's answer: Status is StatusNoState,
// StatusDeleted, StatusInactive, StatusLicenseExpired, or "" when the
// license may grant seats now; Version is its settings version.
type LicenseUsable struct {
	Status  Status
	Version int64
}

// Usable judges whether the license may grant seats at the store's clock
// (Redis TIME), on its live settings. It changes nothing.
func (rs *Redis) Usable(ctx context.Context, licenseID string) (LicenseUsable, error) {
	res, err := scriptUsable.Run(ctx, rs.rdb, rs.keysOf(licenseID)[:1]).Slice()
	if err != nil {
		return LicenseUsable{}, err
	}
	out := LicenseUsable{Status: Status(replyString(res[0]))}
	if len(res) > 1 {
		out.Version = replyInt(res[1])
	}
	return out, nil
}
