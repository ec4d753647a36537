package server

import (
	"cmp"
	"slices"
	"time"
)

// SeatEventKind names what a SeatEvent records.
type SeatEventKind string

const (
	// SeatDenied: a client's call refused a seat, for want of a free one
	// (SEATS_EXHAUSTED) or by the license's site policy (SeatEvent.Reason),
	// once per call: an AcquireSeat, or a WaitForSeat the policy ends (a
	// waiter's own tries are not counted).
	SeatDenied SeatEventKind = "denied"
	// SeatWaited: a WaitForSeat call that ended in a seat, and how long
	// it waited.
	SeatWaited SeatEventKind = "waited"
)

// SeatEvent is a durable count of the usage report that no lease records.
type SeatEvent struct {
	ID        string        `json:"id"`
	TenantID  string        `json:"tenant_id"`
	LicenseID string        `json:"license_id"`
	Kind      SeatEventKind `json:"kind"`
	At        time.Time     `json:"at"`
	Wait      time.Duration `json:"wait,omitempty"`    // SeatWaited only
	Feature   string        `json:"feature,omitempty"` // the request's feature; "" for the base pool
	// Reason is a denial's (SEATS_EXHAUSTED, or a policy's: EXCLUDED,
	// USER_LIMIT...); "" for a wait, or a denial recorded before reasons
	// were (SEATS_EXHAUSTED then) or by a store that keeps none.
	Reason string `json:"reason,omitempty"`
}

// Usage report bounds (service fills in the defaults).
const (
	MaxUsageBuckets   = 1000  // buckets in one report's range
	MaxUsageRows      = 10000 // (license, bucket) rows in one report
	DefaultUsageUsers = 100
	MaxUsageUsers     = 1000
)

// UsageQuery asks for a usage report of the tenant (of one license when
// LicenseID is set) over [Start, End), in buckets of Bucket (an hour or a
// day); Start and End lie on bucket boundaries (UTC). Users bounds the
// per-user table. MaxRows bounds the rows: a report with more is refused
// (EINVALID) rather than cut.
type UsageQuery struct {
	TenantID  string
	LicenseID string // "": every license of the tenant
	Feature   string // "": every feature and the base pools; else only that feature's leases and seat events
	Start     time.Time
	End       time.Time
	Bucket    time.Duration
	Users     int
	MaxRows   int
}

// UsageReport is what the usage report says.
//
// A lease holds its seat over [AcquiredAt, end), end being the earliest of
// its deadline and its end (now, while it is active): an expired lease held
// its seat until its deadline, a lease revoked after its deadline only until
// the deadline. Its user is Lease.User, or its fingerprint when it has none.
type UsageReport struct {
	Rows  []UsageRow  // by LicenseID, Feature, then BucketStart; only buckets with something to say
	Users []UserUsage // by SeatHours desc, then User; at most UsageQuery.Users
}

// UsageRow is one license's base pool, or one feature of it (all its
// grants together), in one bucket.
type UsageRow struct {
	LicenseID    string // the license's id (never a grant's)
	Feature      string // "" for the base pool
	BucketStart  time.Time
	PeakSeats    int     // the most leases holding a seat at one instant of the bucket
	SeatHours    float64 // the leases' time in the bucket, in hours
	Acquisitions int64   // leases acquired in the bucket
	Denials      int64   // SeatDenied events in the bucket
	// PolicyDenials are those of Denials the site policy refused, by
	// reason (EXCLUDED, NOT_INCLUDED, USER_LIMIT, HOST_LIMIT,
	// GROUP_LIMIT, SEATS_RESERVED); nil when none. The others were
	// SEATS_EXHAUSTED (DenialsByReason).
	PolicyDenials map[string]int64
	DistinctUsers int64         // users with a lease holding a seat in, or acquired in, the bucket
	QueueWaits    int64         // SeatWaited events in the bucket
	MeanWait      time.Duration // of the queue waits, to the microsecond
}

// DenialsByReason is the row's denials by reason: PolicyDenials, and the
// others SEATS_EXHAUSTED; nil when it has none. A store that keeps no
// reasons enforces no policy: its denials are all SEATS_EXHAUSTED.
func (r UsageRow) DenialsByReason() map[string]int64 {
	if r.Denials == 0 {
		return nil
	}
	out := make(map[string]int64, len(r.PolicyDenials)+1)
	pool := r.Denials
	for reason, n := range r.PolicyDenials {
		out[reason] = n
		pool -= n
	}
	if pool > 0 {
		out[ReasonSeatsExhausted] = pool
	}
	return out
}

// IsPolicyRefusal reports whether reason is one a license's site policy
// refuses an acquisition with.
func IsPolicyRefusal(reason string) bool {
	switch reason {
	case ReasonExcluded, ReasonNotIncluded, ReasonUserLimit, ReasonHostLimit, ReasonGroupLimit, ReasonSeatsReserved:
		return true
	}
	return false
}

// UserUsage is one user over the whole range.
type UserUsage struct {
	User      string
	SeatHours float64
	Sessions  int64 // leases holding a seat in, or acquired in, the range
}

// LeaseUser is who a lease counts for in a usage report.
func LeaseUser(l *Lease) string { return cmp.Or(l.User, l.Fingerprint) }

// SeatHeldUntil is the end of the time a lease held its seat, as of now.
func SeatHeldUntil(l *Lease, now time.Time) time.Time {
	end := now
	if l.State != LeaseActive {
		end = l.EndedAt
	}
	if l.ExpiresAt.Before(end) {
		end = l.ExpiresAt
	}
	return end
}

// UsageEventOf is the usage event of an ended lease: it held its seat from
// AcquiredAt to SeatHeldUntil, the rule the usage report counts by. An
// expired lease is billed to its deadline (the seat was held until seatd
// reclaimed it, however long ago its last heartbeat was), a lease ended
// after its deadline (revoked before the cleaner recorded its expiry) to
// its deadline too, any other to its end.
func UsageEventOf(l *Lease) UsageEvent {
	end := SeatHeldUntil(l, l.EndedAt)
	if end.Before(l.AcquiredAt) {
		end = l.AcquiredAt
	}
	return UsageEvent{
		LeaseID: l.ID, LicenseID: l.LicenseID, TenantID: l.TenantID, EndState: l.State,
		StartedAt: l.AcquiredAt, EndedAt: end, Duration: end.Sub(l.AcquiredAt), Feature: l.Feature,
	}
}

// BuildUsageReport computes the report from leases and seat events (those
// of other tenants or licenses than q's, or outside its range, are left
// out), as a store without a query language does. Peak concurrency is a
// sweep over the leases' starts and ends.
func BuildUsageReport(q UsageQuery, leases []Lease, events []SeatEvent, now time.Time) (UsageReport, error) {
	// A row is a license's base pool, or one of its features: a lease of
	// a grant counts for its license and feature.
	type pool struct{ license, feature string }
	type key struct {
		license, feature string
		bucket           int
	}
	type acc struct {
		row   UsageRow
		users map[string]bool
		held  time.Duration
		waits time.Duration
	}
	nb := int(q.End.Sub(q.Start) / q.Bucket)
	rows := map[key]*acc{}
	at := func(p pool, b int) *acc {
		k := key{p.license, p.feature, b}
		a := rows[k]
		if a == nil {
			a = &acc{row: UsageRow{LicenseID: p.license, Feature: p.feature, BucketStart: q.Start.Add(time.Duration(b) * q.Bucket)}, users: map[string]bool{}}
			rows[k] = a
		}
		return a
	}
	bucketOf := func(t time.Time) int { return int(t.Sub(q.Start) / q.Bucket) }
	inRange := func(t time.Time) bool { return !t.Before(q.Start) && t.Before(q.End) }

	type edge struct {
		t time.Time
		d int
	}
	edges := map[pool][]edge{}
	users := map[string]*UserUsage{}
	var userHeld = map[string]time.Duration{}
	for i := range leases {
		l := &leases[i]
		p := pool{l.LicenseOf(), l.Feature}
		if l.TenantID != q.TenantID || (q.LicenseID != "" && p.license != q.LicenseID) || (q.Feature != "" && p.feature != q.Feature) {
			continue
		}
		start, end := l.AcquiredAt, SeatHeldUntil(l, now)
		if !start.Before(q.End) || (!end.After(q.Start) && start.Before(q.Start)) {
			continue
		}
		who := LeaseUser(l)
		u := users[who]
		if u == nil {
			u = &UserUsage{User: who}
			users[who] = u
		}
		u.Sessions++
		if inRange(start) {
			a := at(p, bucketOf(start))
			a.row.Acquisitions++
			a.users[who] = true
		}
		if !end.After(start) {
			continue
		}
		userHeld[who] += minTime(end, q.End).Sub(maxTime(start, q.Start))
		edges[p] = append(edges[p], edge{start, +1}, edge{end, -1})
		first := bucketOf(maxTime(start, q.Start))
		for b := first; b < nb; b++ {
			bs := q.Start.Add(time.Duration(b) * q.Bucket)
			if !end.After(bs) {
				break
			}
			a := at(p, b)
			a.held += minTime(end, bs.Add(q.Bucket)).Sub(maxTime(start, bs))
			a.users[who] = true
		}
	}
	// Peak: sweep each license's edges in time order, ends before starts at
	// one instant (a seat given back and taken at once is one seat).
	for p, es := range edges {
		slices.SortFunc(es, func(x, y edge) int { return cmp.Or(x.t.Compare(y.t), cmp.Compare(x.d, y.d)) })
		c, i := 0, 0
		for b := range nb {
			bs, be := q.Start.Add(time.Duration(b)*q.Bucket), q.Start.Add(time.Duration(b+1)*q.Bucket)
			for ; i < len(es) && !es[i].t.After(bs); i++ {
				c += es[i].d
			}
			peak := c
			for ; i < len(es) && es[i].t.Before(be); i++ {
				c += es[i].d
				peak = max(peak, c)
			}
			if peak > 0 {
				at(p, b).row.PeakSeats = peak
			}
		}
	}
	for _, e := range events {
		if !inRange(e.At) || e.TenantID != q.TenantID || (q.LicenseID != "" && e.LicenseID != q.LicenseID) || (q.Feature != "" && e.Feature != q.Feature) {
			continue
		}
		a := at(pool{e.LicenseID, e.Feature}, bucketOf(e.At))
		switch e.Kind {
		case SeatDenied:
			a.row.Denials++
			if IsPolicyRefusal(e.Reason) {
				if a.row.PolicyDenials == nil {
					a.row.PolicyDenials = map[string]int64{}
				}
				a.row.PolicyDenials[e.Reason]++
			}
		case SeatWaited:
			a.row.QueueWaits++
			a.waits += e.Wait
		}
	}

	var rep UsageReport
	for _, a := range rows {
		a.row.SeatHours = a.held.Hours()
		a.row.DistinctUsers = int64(len(a.users))
		if a.row.QueueWaits > 0 {
			a.row.MeanWait = (a.waits / time.Duration(a.row.QueueWaits)).Truncate(time.Microsecond)
		}
		rep.Rows = append(rep.Rows, a.row)
	}
	if q.MaxRows > 0 && len(rep.Rows) > q.MaxRows {
		return UsageReport{}, ErrUsageReportTooLarge(q.MaxRows)
	}
	slices.SortFunc(rep.Rows, func(x, y UsageRow) int {
		return cmp.Or(cmp.Compare(x.LicenseID, y.LicenseID), cmp.Compare(x.Feature, y.Feature), x.BucketStart.Compare(y.BucketStart))
	})
	for who, u := range users {
		u.SeatHours = userHeld[who].Hours()
		rep.Users = append(rep.Users, *u)
	}
	slices.SortFunc(rep.Users, func(x, y UserUsage) int {
		return cmp.Or(cmp.Compare(y.SeatHours, x.SeatHours), cmp.Compare(x.User, y.User))
	})
	if q.Users > 0 && len(rep.Users) > q.Users {
		rep.Users = rep.Users[:q.Users]
	}
	return rep, nil
}

// ErrUsageReportTooLarge refuses a report of more than max rows.
func ErrUsageReportTooLarge(max int) error {
	return Invalid("start_time", "the report would have more than %d rows: name a license, or narrow the range or the bucket", max)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
