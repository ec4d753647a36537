package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Params are the checker's allowances.
type Params struct {
	// Bound is how much of an acknowledged deadline a fault may take
	// away: the write-behind interval plus the clock tolerance.
	Bound time.Duration
	// Flush is the write-behind interval, and Slack what a store gives
	// back to recorded deadlines when it lost the heartbeats written
	// behind (server.WriteBehindSlack). Together they say which
	// acknowledged deadlines are secure (see secure); zero Flush treats
	// every one as secure.
	Flush, Slack time.Duration
	// Final says the records were read after every lease's deadline had
	// passed and a cleanup pass ran: no lease may still be active.
	Final bool
	// WaitHold is seatd's --wait-hold: a seat granted to a waiter goes to
	// the next one unless heartbeated within it.
	WaitHold time.Duration
	// Repair is how long after its end in the record a lease may still
	// heartbeat (the record is the truth: within a flush interval, plus
	// the clock tolerance).
	Repair time.Duration
	// Grants are the feature grants of the campaign's licenses, by id:
	// each is a pool with its own seat limit, and what it may grant.
	Grants map[string]Grant
	// Policies are the site policies of the campaign's licenses, by
	// license id (policy.go: checkPolicies).
	Policies map[string]Policy
}

// Grant is a feature grant as the campaign created it.
type Grant struct {
	ID, License string
	Feature     string
	Version     string // the highest version covered; "" every version
	Limit       int    // seats + overdraft
	// The grant grants nothing before StartsAt nor from ExpiresAt (zero:
	// no bound), and no heartbeat of its leases succeeds from ExpiresAt.
	StartsAt, ExpiresAt time.Time
}

// covers reports whether the grant may grant a seat of feature at version
// ("": any version).
func (g Grant) covers(feature, version string) bool {
	return g.Feature == feature && (version == "" || g.Version == "" || compareVersions(version, g.Version) <= 0)
}

// clockGrain is how far apart the campaign's clock and a server's may put
// one instant: the same machine's clock, stored to the millisecond.
const clockGrain = 10 * time.Millisecond

// Violation is a property the history breaks.
type Violation struct {
	Property string // "seat-limit", "final-end", "lost-end", "exactly-once", "deadline", "lost-grant", "grant-choice", "grant-version", "grant-expired", "record-truth", "policy-*" (policy.go)
	License  string // the pool: the license's id, or the grant's
	Lease    string
	Detail   string
	Ops      []Op // the operations that show it
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s: license %s lease %s: %s", v.Property, v.License, v.Lease, v.Detail)
	for _, op := range v.Ops {
		s += "\n    " + op.String()
	}
	return s
}

// String prints an operation for a violation report.
func (op Op) String() string {
	s := fmt.Sprintf("client %d %s %s [%s .. %s] %s", op.Client, op.Kind, op.Lease,
		op.Start.Format("15:04:05.000"), op.End.Format("15:04:05.000"), op.Outcome)
	if op.Feature != "" {
		s += " feature " + op.Feature + " version " + op.Version
	}
	if op.User != "" || op.Host != "" {
		s += fmt.Sprintf(" user %q host %q", op.User, op.Host)
	}
	if op.Grant != "" {
		s += " grant " + op.Grant
	}
	if op.Reason != "" {
		s += " " + op.Reason
	}
	if op.Rule != "" {
		s += " rule " + op.Rule
	}
	if !op.Deadline.IsZero() {
		s += " deadline " + op.Deadline.Format("15:04:05.000")
	}
	if op.State != "" {
		s += " state " + op.State
	}
	return s
}

// Check proves the invariants from a history, the seat limit (seats +
// overdraft) of each license's base pool (limits, by license id) and of
// each grant (p.Grants), and the final records (by lease id):
//
//   - seat-limit: at no instant more leases held in a pool (a license's
//     base pool, or one grant: invariant 12) than its limit, where a
//     client surely holds a lease from the grant's answer until the first
//     of: its last acknowledged deadline less Bound, the invocation of a
//     release or revoke of it, the answer that told it ended;
//   - grant-choice: a request without a feature took a base seat, one
//     with a feature a seat of a grant of the campaign;
//   - grant-version: the grant is of the feature asked and covers the
//     version asked;
//   - grant-expired: no seat was granted by a grant that had expired or
//     not yet started, and no heartbeat invoked once its grant had
//     expired succeeded;
//   - final-end: no heartbeat succeeds that was invoked after anyone was
//     told the lease ended (a release or revoke succeeded, a heartbeat or
//     release answered LEASE_EXPIRED/RELEASED/REVOKED);
//   - lost-end: an acknowledged release or revoke is in the record;
//   - exactly-once: one terminal state, one usage event per ended lease,
//     one cleanup event per expired one and none for others; with Final,
//     no lease still active;
//   - lost-grant: every lease a client was granted is in the record;
//   - deadline: no heartbeat or release answered before its last secure
//     acknowledged deadline less Bound is told LEASE_EXPIRED;
//   - record-truth: no heartbeat invoked more than Repair after the lease
//     ended in the record succeeds, whoever ended it and whatever crashed;
//   - policy-exclude, policy-include, policy-cap, policy-reserve,
//     policy-reason: the site policies of p.Policies (checkPolicies).
func Check(ops []Op, limits map[string]int, records map[string]Record, p Params) []Violation {
	byLease := map[string][]Op{}
	for _, op := range ops {
		if op.Lease != "" {
			byLease[op.Lease] = append(byLease[op.Lease], op)
		}
	}
	var out []Violation
	out = append(out, checkSeatLimit(byLease, limits, p)...)
	for _, id := range sortedKeys(byLease) {
		lops := byLease[id]
		out = append(out, checkGrant(id, lops, p)...)
		out = append(out, checkFinal(id, lops)...)
		out = append(out, checkDeadlines(id, lops, p)...)
		out = append(out, checkRecorded(id, lops, records)...)
		out = append(out, checkRecordTruth(id, lops, records, p)...)
	}
	out = append(out, checkRecords(records, p)...)
	out = append(out, checkPolicies(byLease, ops, limits, records, p)...)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// granted returns the op that granted a lease, if a client was granted it.
func granted(lops []Op) (Op, bool) {
	for _, op := range lops {
		if (op.Kind == Acquire || op.Kind == Wait) && op.Outcome == OK {
			return op, true
		}
	}
	return Op{}, false
}

// secure returns, for each op of a lease, whether it is an acknowledged
// deadline that a fault may shorten by at most Bound. A fault that loses
// the heartbeats written behind (a Redis loss, a crash) forgets those of
// the last Flush and falls back on the last one recorded, plus Slack; a
// grant is recorded before it is answered. So an acknowledged heartbeat
// is secure if the last ack that was surely recorded a Flush before it
// (or the grant) is at most Flush + Slack older: a client on time. One
// that came later (a client that slept past its deadline and was revived)
// may be forgotten with what it gave, as the README documents.
func secure(lops []Op, p Params) []bool {
	out := make([]bool, len(lops))
	var acks []Op
	for i, op := range lops {
		if op.Outcome != OK || op.Deadline.IsZero() {
			continue
		}
		switch op.Kind {
		case Acquire, Wait:
			out[i] = true
		case Heartbeat:
			out[i] = p.Flush == 0
			var anchor *Op
			for j := range acks {
				a := &acks[j]
				if a.Kind == Acquire || a.Kind == Wait || !a.End.After(op.End.Add(-p.Flush)) {
					if anchor == nil || a.Start.After(anchor.Start) {
						anchor = a
					}
				}
			}
			if anchor != nil && op.End.Sub(anchor.Start) <= p.Flush+p.Slack {
				out[i] = true
			}
		default:
			continue
		}
		acks = append(acks, op)
	}
	return out
}

// held is the interval in which a client surely held a lease.
type held struct {
	lease, pool string
	from, to    time.Time
	ops         []Op
}

func holding(id string, lops []Op, p Params) (held, bool) {
	g, ok := granted(lops)
	if !ok {
		return held{}, false
	}
	bound := p.Bound
	var lastAck time.Time
	to := time.Time{}
	cut := func(t time.Time) {
		if to.IsZero() || t.Before(to) {
			to = t
		}
	}
	sec := secure(lops, p)
	for i, op := range lops {
		if sec[i] && op.Deadline.After(lastAck) {
			lastAck = op.Deadline
		}
		if op.Kind == Release || op.Kind == Revoke {
			cut(op.Start)
		}
		if op.tellsEnded() {
			cut(op.Start)
		}
	}
	cut(lastAck.Add(-bound))
	if g.Kind == Wait && !confirmedWithin(lops, g.Start.Add(p.WaitHold)) {
		cut(g.Start.Add(p.WaitHold)) // the server may have passed it on
	}
	if !to.After(g.End) {
		return held{}, false
	}
	return held{lease: id, pool: g.Pool(), from: g.End, to: to, ops: lops}, true
}

// confirmedWithin reports whether a heartbeat answered success before t.
func confirmedWithin(lops []Op, t time.Time) bool {
	for _, op := range lops {
		if op.Kind == Heartbeat && op.Outcome == OK && op.End.Before(t) {
			return true
		}
	}
	return false
}

func checkSeatLimit(byLease map[string][]Op, limits map[string]int, p Params) []Violation {
	byPool := map[string][]held{}
	for _, id := range sortedKeys(byLease) {
		if h, ok := holding(id, byLease[id], p); ok {
			byPool[h.pool] = append(byPool[h.pool], h)
		}
	}
	var out []Violation
	for _, pool := range sortedKeys(byPool) {
		hs := byPool[pool]
		limit, ok := limits[pool]
		if g, isGrant := p.Grants[pool]; isGrant {
			limit, ok = g.Limit, true
		}
		if !ok {
			continue
		}
		type event struct {
			at  time.Time
			add bool
			h   held
		}
		var evs []event
		for _, h := range hs {
			evs = append(evs, event{h.from, true, h}, event{h.to, false, h})
		}
		// Ends before starts at the same instant: touching is not overlap.
		sort.Slice(evs, func(i, j int) bool {
			if !evs[i].at.Equal(evs[j].at) {
				return evs[i].at.Before(evs[j].at)
			}
			return !evs[i].add && evs[j].add
		})
		var open []held
		reported := false
		for _, e := range evs {
			if !e.add {
				open = slices.DeleteFunc(open, func(x held) bool { return x.lease == e.h.lease })
				continue
			}
			open = append(open, e.h)
			if len(open) > limit && !reported {
				reported = true // one report per pool is enough to act on
				v := Violation{Property: "seat-limit", License: pool,
					Detail: fmt.Sprintf("%d leases held at %s, limit %d", len(open), e.at.Format("15:04:05.000"), limit)}
				for _, x := range open {
					v.Lease += x.lease + " "
					v.Ops = append(v.Ops, x.ops...)
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// checkGrant judges the pool a lease was granted from against the
// request (grant-choice, grant-version) and the grant's dates
// (grant-expired). A server judges between an op's invocation and its
// answer, so an op is surely late only if invoked after an expiry, and
// surely early only if answered before a start.
func checkGrant(id string, lops []Op, p Params) []Violation {
	g, ok := granted(lops)
	if !ok {
		return nil
	}
	bad := func(property, detail string, ops ...Op) []Violation {
		return []Violation{{Property: property, License: g.Pool(), Lease: id, Detail: detail, Ops: ops}}
	}
	switch {
	case g.Grant == "" && g.Feature == "":
		return nil // a base seat, as asked
	case g.Grant == "":
		return bad("grant-choice", "a request for feature "+g.Feature+" took a seat of the base pool", g)
	case g.Feature == "":
		return bad("grant-choice", "a request without a feature took a seat of a grant", g)
	}
	grant, known := p.Grants[g.Grant]
	switch {
	case !known:
		return bad("grant-choice", "granted by a grant the campaign did not create", g)
	case !grant.covers(g.Feature, g.Version):
		return bad("grant-version", fmt.Sprintf("granted by a grant of %s up to version %q for %s version %q",
			grant.Feature, grant.Version, g.Feature, g.Version), g)
	case !grant.ExpiresAt.IsZero() && g.Start.After(grant.ExpiresAt.Add(clockGrain)):
		return bad("grant-expired", "granted by a grant that expired at "+grant.ExpiresAt.Format("15:04:05.000"), g)
	case !grant.StartsAt.IsZero() && g.End.Before(grant.StartsAt.Add(-clockGrain)):
		return bad("grant-expired", "granted by a grant that starts at "+grant.StartsAt.Format("15:04:05.000"), g)
	}
	if grant.ExpiresAt.IsZero() {
		return nil
	}
	for _, op := range lops {
		if op.Kind == Heartbeat && op.Outcome == OK && op.Start.After(grant.ExpiresAt.Add(clockGrain)) {
			return bad("grant-expired", "a heartbeat succeeded after the grant expired at "+grant.ExpiresAt.Format("15:04:05.000"), g, op)
		}
	}
	return nil
}

// compareVersions compares dotted versions component by component as
// numbers, a missing component as 0 (issue 26): -1, 0 or 1. The checker
// has its own, not the server's: it is the oracle.
func compareVersions(a, b string) int {
	for a != "" || b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
		if c := cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(x, y)); c != 0 {
			return c
		}
	}
	return 0
}

func checkFinal(id string, lops []Op) []Violation {
	var told *Op
	for i, op := range lops {
		if op.tellsEnded() && (told == nil || op.End.Before(told.End)) {
			told = &lops[i]
		}
	}
	if told == nil {
		return nil
	}
	for _, op := range lops {
		if op.Kind == Heartbeat && op.Outcome == OK && op.Start.After(told.End) {
			return []Violation{{Property: "final-end", License: op.License, Lease: id,
				Detail: "a heartbeat succeeded after the lease was told ended", Ops: []Op{*told, op}}}
		}
	}
	return nil
}

func checkDeadlines(id string, lops []Op, p Params) []Violation {
	var lastAck time.Time
	ended := false
	var ack Op
	sec := secure(lops, p)
	for i, op := range lops { // by invocation
		if op.Kind == Release || op.Kind == Revoke {
			ended = true // from here on the lease may end for other reasons
		}
		// Judged at some point of the call: surely too early only if it
		// was answered before the deadline less the bound.
		if !ended && op.Outcome == Failed && op.Reason == ReasonExpired && (op.Kind == Heartbeat || op.Kind == Release) &&
			op.End.Before(lastAck.Add(-p.Bound)) {
			return []Violation{{Property: "deadline", License: op.License, Lease: id,
				Detail: fmt.Sprintf("told LEASE_EXPIRED %v before the deadline acknowledged last",
					lastAck.Sub(op.End).Round(time.Millisecond)), Ops: []Op{ack, op}}}
		}
		if sec[i] && op.Deadline.After(lastAck) {
			lastAck, ack = op.Deadline, op
		}
	}
	return nil
}

func checkRecorded(id string, lops []Op, records map[string]Record) []Violation {
	var out []Violation
	rec, found := records[id]
	if g, ok := granted(lops); ok && !found {
		out = append(out, Violation{Property: "lost-grant", License: g.License, Lease: id,
			Detail: "a client was granted this lease; the record does not hold it", Ops: []Op{g}})
	}
	if !found {
		return out
	}
	for _, op := range lops {
		if op.Outcome != OK {
			continue
		}
		switch {
		case op.Kind == Release && rec.State != "released":
			out = append(out, Violation{Property: "lost-end", License: op.License, Lease: id,
				Detail: "release acknowledged, record says " + rec.State, Ops: []Op{op}})
		case op.Kind == Revoke && op.State != "" && rec.State != op.State:
			out = append(out, Violation{Property: "lost-end", License: op.License, Lease: id,
				Detail: "revoke acknowledged (" + op.State + "), record says " + rec.State, Ops: []Op{op}})
		}
	}
	return out
}

func checkRecords(records map[string]Record, p Params) []Violation {
	var out []Violation
	for _, id := range sortedKeys(records) {
		r := records[id]
		bad := func(detail string) {
			out = append(out, Violation{Property: "exactly-once", License: r.License, Lease: id, Detail: detail})
		}
		switch {
		case r.State == "active" && p.Final:
			bad("still active after every deadline passed and a cleanup ran")
		case r.State == "active" && (r.UsageEvents > 0 || r.CleanupEvents > 0):
			bad(fmt.Sprintf("active with %d usage and %d cleanup events", r.UsageEvents, r.CleanupEvents))
		case r.State != "active" && r.UsageEvents != 1:
			bad(fmt.Sprintf("%s with %d usage events", r.State, r.UsageEvents))
		case r.State == "expired" && r.CleanupEvents != 1:
			bad(fmt.Sprintf("expired with %d cleanup events", r.CleanupEvents))
		case r.State != "expired" && r.CleanupEvents != 0:
			bad(fmt.Sprintf("%s with %d cleanup events", r.State, r.CleanupEvents))
		}
	}
	return out
}

func checkRecordTruth(id string, lops []Op, records map[string]Record, p Params) []Violation {
	rec, ok := records[id]
	if !ok || rec.EndedAt.IsZero() || p.Repair <= 0 {
		return nil
	}
	for _, op := range lops {
		if op.Kind == Heartbeat && op.Outcome == OK && op.Start.After(rec.EndedAt.Add(p.Repair)) {
			return []Violation{{Property: "record-truth", License: op.License, Lease: id,
				Detail: fmt.Sprintf("a heartbeat succeeded %v after the record ended the lease (%s at %s)",
					op.Start.Sub(rec.EndedAt).Round(time.Millisecond), rec.State, rec.EndedAt.Format("15:04:05.000")), Ops: []Op{op}}}
		}
	}
	return nil
}
