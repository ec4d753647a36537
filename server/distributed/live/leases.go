package live

import (
	"context"
	"fmt"
	"time"

	"github.com/seatd/seatd/server"
)

// Status is a script's verdict on one call (lua/acquire.lua, heartbeat.lua,
// check.lua say when each is given).
type Status string

const (
	// For the whole license, whatever the call:
	StatusNoState        Status = "NOCONF"     // the live state is missing: rebuild it, ask again
	StatusDeleted        Status = "DELETED"    // the license is deleted
	StatusPolicy         Status = "POLICY"     // acquire: the license has a site policy: AcquirePoolSet judges it
	StatusInactive       Status = "INACTIVE"   // the license is switched off
	StatusLicenseExpired Status = "LICEXPIRED" // the license's own end date passed

	// An acquisition:
	StatusGranted    Status = "NEW"       // a new lease
	StatusHandedBack Status = "EXISTING"  // the live lease of the same idempotency or dedupe key, new token
	StatusExhausted  Status = "EXHAUSTED" // no seat free
	StatusDuplicate  Status = "DUP"       // the lease id is taken
	// A borrow the license (or a grant's pool) refuses: borrowing is off,
	// the duration is too long, the borrow would end after the pool's
	// expiry, or its borrowed seats are all out (InUse and Limit say how
	// many are borrowed, of how many). Acquired is when it was judged.
	StatusNoBorrow         Status = "NOBORROW"
	StatusBorrowLong       Status = "BORROWLONG"
	StatusBorrowPastExpiry Status = "BORROWEXP"
	StatusBorrowLimit      Status = "BORROWLIMIT"
	StatusFailed           Status = "ERR" // the script refused this call (Acquisition.Message)

	// A heartbeat or a release's check:
	StatusRenewed    Status = "OK"       // heartbeat: renewed
	StatusLive       Status = "LIVE"     // check: the lease holds its seat
	StatusNoLease    Status = "NOLEASE"  // not in the live state
	StatusWrongToken Status = "TOKEN"    // the token does not match
	StatusExpired    Status = "EXPIRED"  // past its deadline, not revived
	StatusBorrowed   Status = "BORROWED" // heartbeat: a borrowed lease, which keeps its deadline
	// A lingering lease (server/linger.go): heartbeat: released by its
	// client, nothing changed; check: released before (its linger may
	// have lapsed since: Check.Deadline says).
	StatusReleased  Status = "RELEASED"
	StatusLingering Status = "LINGERING"
	StatusLingered  Status = "LINGERED" // check: released now, it lingers
	// heartbeat: a lapsed lease within the revival window of a license with
	// a site policy: Revive judges whether it comes back.
	StatusJudgeRevival Status = "REVIVE"
)

// beatStatuses are heartbeat.lua's status codes, in code order (small
// integers are cheaper to build in Lua and to read here than strings).
var beatStatuses = [...]Status{StatusRenewed, StatusNoLease, StatusWrongToken, StatusExpired, StatusInactive, StatusLicenseExpired,
	StatusBorrowed, StatusJudgeRevival, StatusReleased}

// strategies are every leasing strategy: acquire.lua picks the dedupe key
// of the license's current one from the keys computed here, so that the
// rule stays in one place (server.DedupeKey).
var strategies = []server.LeasingStrategy{server.PerFingerprint, server.PerUser, server.PerHostname, server.PerAcquisition}

// Acquisition is acquire.lua's answer to one acquisition. Granted and
// HandedBack set every field; Exhausted and BorrowLimit set InUse and
// Limit; the borrow refusals set License and Acquired (when they were
// judged); Failed sets Message.
type Acquisition struct {
	Status                        Status
	LeaseID                       string
	Acquired, Heartbeat, Deadline time.Time
	TokenSeq                      int64
	InUse, Limit                  int
	License                       server.License // the settings the grant was judged by
	Epoch                         int64          // of the live state that granted it
	Version                       int64          // of those settings
	PrevFirst                     int64          // earliest deadline before the grant (unix µs), -1 if none
	DedupeKey                     string
	Displaced                     []string // lapsed leases whose seats or keys the grant took (now expiring)
	DisplacedPools                []string // the pool of each of Displaced (AcquirePools; nil: the grant's own)
	Message                       string
	// Reservation is the site-policy reservation whose seat a new lease
	// took (Judgement's key; "" a shared seat, or no policy).
	Reservation string
	// Replaced is the live lease of the same keys but another user or
	// host whose place a new lease took (AcquirePools, under a site
	// policy): out of the live state, expiring, to be recorded revoked.
	Replaced *ReplacedLease
	// Reclaimed: HandedBack a lease that was lingering, now taken back by
	// its client (server/linger.go).
	Reclaimed bool
}

// ReplacedLease is an Acquisition's Replaced.
type ReplacedLease struct {
	PoolID, LeaseID     string
	Heartbeat, Deadline time.Time
}

// Acquire asks for a seat of the license under req.LeaseID, or for the
// live lease of req's idempotency or dedupe key (acquire.lua).
func (rs *Redis) Acquire(ctx context.Context, licenseID string, req *server.AcquireRequest, out *Acquisition) error {
	args := make([]any, 0, 4+2*len(strategies))
	args = append(args, leaseKey(req.LeaseID), tokenKey(req.TokenHash), req.IdempotencyKey, borrowUS(req.BorrowFor))
	for _, st := range strategies {
		args = append(args, string(st), server.DedupeKey(st, req.Fingerprint, req.User, req.Hostname))
	}
	res, err := rs.evalLicense(ctx, scriptAcquire, licenseID, args...)
	if err != nil {
		return err
	}
	*out = Acquisition{Status: Status(res.status())}
	mine := res.mine
	switch out.Status {
	case StatusGranted, StatusHandedBack:
		out.LeaseID = leaseIDOf(replyString(mine[1]))
		out.Acquired, out.Heartbeat, out.Deadline = usTime(replyInt(mine[2])), usTime(replyInt(mine[3])), usTime(replyInt(mine[4]))
		out.TokenSeq, out.InUse = replyInt(mine[5]), int(replyInt(mine[6]))
		out.PrevFirst, out.DedupeKey = replyInt(mine[7]), replyString(mine[8])
		out.Reclaimed = out.Status == StatusHandedBack && replyInt(mine[11]) == 1
		out.Epoch, out.Version = replyInt(res.shared(2)), replyInt(res.shared(3))
		if d, _ := mine[10].([]any); len(d) > 0 {
			out.Displaced = make([]string, len(d))
			for i, k := range d {
				out.Displaced[i] = leaseIDOf(replyString(k))
			}
		}
		return rs.licenseOf(replyString(res.shared(1)), &out.License)
	case StatusExhausted:
		out.InUse, out.Limit = int(replyInt(mine[6])), int(replyInt(mine[9]))
	case StatusNoBorrow, StatusBorrowLong, StatusBorrowPastExpiry, StatusBorrowLimit:
		out.Acquired, out.InUse, out.Limit = usTime(replyInt(mine[2])), int(replyInt(mine[6])), int(replyInt(mine[9]))
		return rs.licenseOf(replyString(res.shared(1)), &out.License)
	case StatusFailed:
		out.Message = replyString(mine[1])
	}
	return nil
}

// Beat is heartbeat.lua's answer to one heartbeat. Renewed sets the new
// values.
type Beat struct {
	Status              Status
	Heartbeat, Deadline time.Time
	PrevFirst           int64 // earliest deadline before the renewal (unix µs), -1 if none
}

// Heartbeat renews a lease still in the live state (heartbeat.lua).
func (rs *Redis) Heartbeat(ctx context.Context, licenseID, leaseID, tokenHash string) (Beat, error) {
	r, err := rs.evalLicense(ctx, scriptHeartbeat, licenseID, leaseKey(leaseID), tokenKey(tokenHash))
	if err != nil {
		return Beat{}, err
	}
	if r.mine == nil { // NOCONF, DELETED: shared
		return Beat{Status: Status(r.status())}, nil
	}
	code := replyInt(r.mine[0])
	if code < 0 || code >= int64(len(beatStatuses)) {
		return Beat{Status: Status(replyString(r.mine[0]))}, nil
	}
	b := Beat{Status: beatStatuses[code]}
	if b.Status == StatusRenewed {
		now := replyInt(r.shared(2))
		b.Heartbeat, b.Deadline, b.PrevFirst = usTime(now), usTime(now+replyInt(r.shared(3))), replyInt(r.shared(1))
	}
	return b, nil
}

// Check is check.lua's judgement of a release. Live, Lingered and
// Lingering set the times and the token seq; Lingered the earliest
// deadline of the license before it (PrevFirst, unix µs, -1 if none).
type Check struct {
	Status              Status
	Now                 time.Time
	Heartbeat, Deadline time.Time
	TokenSeq            int64
	PrevFirst           int64
}

// Check judges a release: the token, then whether the lease is still live.
// A live lease of a pool with a linger lingers (Lingered); else it changes
// nothing.
func (rs *Redis) Check(ctx context.Context, licenseID, leaseID, tokenHash string) (Check, error) {
	res, err := rs.evalLicense(ctx, scriptCheck, licenseID, leaseKey(leaseID), tokenKey(tokenHash))
	if err != nil {
		return Check{}, err
	}
	c := Check{Status: Status(res.status()), PrevFirst: -1}
	switch c.Status {
	case StatusLive, StatusLingered, StatusLingering:
		c.Now, c.Heartbeat, c.Deadline = usTime(replyInt(res.shared(1))), usTime(replyInt(res.mine[2])), usTime(replyInt(res.mine[3]))
		c.TokenSeq, c.PrevFirst = replyInt(res.mine[4]), replyInt(res.mine[5])
	}
	return c, nil
}

// End removes ended leases of a license from the live state and remembers
// their ends (end.lua). Idempotent.
func (rs *Redis) End(ctx context.Context, licenseID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := rs.evalLicense(ctx, scriptEnd, licenseID, leaseKeys(ids)...)
	return err
}

// EndMany is End for several licenses, pipelined; removed[i] is how many
// of leases[i] the live state still held (live or expiring), errs[i] its
// error.
func (rs *Redis) EndMany(ctx context.Context, leases []LicenseLeases) (removed []int64, errs []error) {
	calls := make([]scriptCall, len(leases))
	for i, l := range leases {
		calls[i] = scriptCall{scriptEnd, rs.keysOf(l.LicenseID), leaseKeys(l.IDs)}
	}
	removed, errs = make([]int64, len(leases)), make([]error, len(leases))
	for i, r := range rs.pipelineScripts(ctx, calls) {
		if errs[i] = r.err; r.err == nil {
			removed[i] = replyInt(r.val)
		}
	}
	return removed, errs
}

// LicenseLeases names leases of one license.
type LicenseLeases struct {
	LicenseID string
	IDs       []string
}

// Noop runs a script that does nothing through the hot path's batching, on
// a license's keys, as Heartbeat runs heartbeat.lua: make bench's ceiling
// of what one Redis round trip per call costs.
func (rs *Redis) Noop(ctx context.Context, licenseID string) error {
	_, err := rs.evalLicense(ctx, scriptNoop, licenseID, 0)
	return err
}

// Count is what count.lua reads of a license.
type Count struct {
	TenantID string
	Deleted  bool
	InUse    int // live leases
}

// Count counts the live leases of a license; ErrNoState if its live state
// is missing.
func (rs *Redis) Count(ctx context.Context, licenseID string) (Count, error) {
	res, err := scriptCount.Run(ctx, rs.rdb, rs.keysOf(licenseID)).Slice()
	if err != nil {
		return Count{}, err
	}
	if Status(replyString(res[0])) == StatusNoState {
		return Count{}, ErrNoState
	}
	return Count{TenantID: replyString(res[1]), Deleted: replyInt(res[2]) == 1, InUse: int(replyInt(res[3]))}, nil
}

// Values are the values of a lease the live state holds, newer than the
// record's.
type Values struct {
	Heartbeat, Deadline time.Time
	Expiring            bool // taken out of the live state, expiry not yet recorded
}

// Peek reads the live values of leases of a license (all of them when ids
// is empty) and the store's time. It changes nothing. If the license's
// live state is missing it says so with ErrNoState (and the time): what it
// read is not what Redis will enforce once the state is rebuilt.
func (rs *Redis) Peek(ctx context.Context, licenseID string, ids ...string) (map[string]Values, time.Time, error) {
	res, err := scriptPeek.Run(ctx, rs.rdb, rs.keysOf(licenseID), leaseKeys(ids)...).Slice()
	if err != nil {
		return nil, time.Time{}, err
	}
	now := usTime(replyInt(res[0]))
	if replyInt(res[1]) != 1 {
		return nil, now, ErrNoState
	}
	out := make(map[string]Values, (len(res)-2)/4)
	for i := 2; i+3 < len(res); i += 4 {
		out[leaseIDOf(replyString(res[i]))] = Values{
			Heartbeat: usTime(replyInt(res[i+2])),
			Deadline:  usTime(replyInt(res[i+3])),
			Expiring:  replyString(res[i+1]) == "X",
		}
	}
	return out, now, nil
}

// Taken are the leases expire.lua took out of one license's live state.
type Taken struct {
	Now    time.Time // when it judged them
	Leases []TakenLease
}

// TakenLease is a lease taken out of the live state, with its last values.
type TakenLease struct {
	ID                  string
	Heartbeat, Deadline time.Time
	Lingering           bool // a lapsed linger (Expire): it ends released
}

// Expire moves the named leases still past their deadline into each
// license's expiring hash, where they hold no seat and no heartbeat
// revives them, and returns them with those already waiting there
// (expire.lua), pipelined; errs[i] (ErrNoState for a missing live state)
// is the error of leases[i].
func (rs *Redis) Expire(ctx context.Context, leases []LicenseLeases) ([]Taken, []error) {
	calls := make([]scriptCall, len(leases))
	for i, l := range leases {
		calls[i] = scriptCall{scriptExpire, rs.keysOf(l.LicenseID), leaseKeys(l.IDs)}
	}
	out, errs := make([]Taken, len(leases)), make([]error, len(leases))
	for i, r := range rs.pipelineScripts(ctx, calls) {
		res, err := r.slice()
		if err == nil && Status(replyString(res[0])) == StatusNoState {
			err = ErrNoState
		}
		if errs[i] = err; err != nil {
			continue
		}
		out[i].Now = usTime(replyInt(res[1]))
		for j := 2; j+4 < len(res); j += 5 {
			out[i].Leases = append(out[i].Leases, TakenLease{ID: leaseIDOf(replyString(res[j])),
				Heartbeat: usTime(replyInt(res[j+2])), Deadline: usTime(replyInt(res[j+3])), Lingering: replyInt(res[j+4]) == 1})
		}
	}
	return out, errs
}

// TakeStatus is take.lua's answer for a lease.
type TakeStatus string

const (
	TakeTaken     TakeStatus = "TAKEN"     // out of the live state, into the expiring hash
	TakeConfirmed TakeStatus = "CONFIRMED" // heartbeated (or given time back) since the grant: left alone
	TakeNotLive   TakeStatus = "NOLEASE"   // not in the live state: ended, or expiring
)

// Take moves a lease granted to a waiter into the expiring hash, where it
// holds no seat and no heartbeat renews it, only while its last heartbeat
// and deadline are no later than granted's (take.lua): one atomic step
// with every heartbeat. ErrNoState when the license's live state is
// missing.
func (rs *Redis) Take(ctx context.Context, licenseID, leaseID string, granted TakenLease) (TakeStatus, TakenLease, time.Time, error) {
	res, err := scriptTake.Run(ctx, rs.rdb, rs.keysOf(licenseID), leaseKey(leaseID), timeUS(granted.Heartbeat), timeUS(granted.Deadline)).Slice()
	if err != nil {
		return "", TakenLease{}, time.Time{}, err
	}
	if Status(replyString(res[0])) == StatusNoState {
		return "", TakenLease{}, time.Time{}, ErrNoState
	}
	if len(res) != 5 {
		return "", TakenLease{}, time.Time{}, fmt.Errorf("take.lua: unexpected reply %v", res)
	}
	return TakeStatus(replyString(res[2])),
		TakenLease{ID: leaseID, Heartbeat: usTime(replyInt(res[3])), Deadline: usTime(replyInt(res[4]))},
		usTime(replyInt(res[1])), nil
}

// Lease is a recorded active lease, as a rebuild and adopt.lua take it.
type Lease struct {
	ID, TokenHash                 string
	Acquired, Heartbeat, Deadline time.Time
	DedupeKey, IdempotencyKey     string
	TokenSeq                      int64
	Borrowed                      bool
	Lingering                     bool // server.Lease.Lingering
}

// args appends the lease as the scripts take it: 9 values, the last its
// kind: 0, 1 borrowed, 2 lingering.
func (l Lease) args(to []any) []any {
	kind := boolArg(l.Borrowed)
	if l.Lingering {
		kind = 2
	}
	return append(to, leaseKey(l.ID), tokenKey(l.TokenHash), timeUS(l.Acquired), timeUS(l.Heartbeat), timeUS(l.Deadline),
		l.DedupeKey, l.IdempotencyKey, l.TokenSeq, kind)
}

// borrowUS is a borrow's duration as acquire.lua takes it, in whole
// microseconds rounded up: a borrow of less than 1 µs is still a borrow
// (0 would say "not a borrow").
func borrowUS(d time.Duration) int64 {
	return (d + time.Microsecond - 1).Microseconds()
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Adopted is adopt.lua's answer for one license.
type Adopted struct {
	N     int64 // leases handed to the expiring hash
	First int64 // the license's earliest deadline now (unix µs), -1 if none
}

// Adopt hands recorded active leases that the live state holds nowhere to
// their license's expiring hash, for cleanup to record (adopt.lua),
// pipelined per license; errs[i] (ErrNoState for a missing live state) is
// the error of licenses[i].
func (rs *Redis) Adopt(ctx context.Context, licenses []string, leases [][]Lease) ([]Adopted, []error) {
	calls := make([]scriptCall, len(licenses))
	for i, id := range licenses {
		var args []any
		for _, l := range leases[i] {
			args = l.args(args)
		}
		calls[i] = scriptCall{scriptAdopt, rs.keysOf(id), args}
	}
	out, errs := make([]Adopted, len(licenses)), make([]error, len(licenses))
	for i, r := range rs.pipelineScripts(ctx, calls) {
		res, err := r.slice()
		if err == nil && Status(replyString(res[0])) == StatusNoState {
			err = ErrNoState
		}
		if errs[i] = err; err == nil {
			out[i] = Adopted{N: replyInt(res[1]), First: replyInt(res[2])}
		}
	}
	return out, errs
}
