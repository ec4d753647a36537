package embedded

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
)

// acquireFeature is Acquire of req.Feature: every grant of lic that
// covers req.Version is judged in one step under the store's lock
// (invariant 12), each as the pool it is (grants.go), in pick order.
// again is true when a write in flight must settle first: the caller
// waits and judges everything anew. Call with s.mu held and lic idle.
func (s *Store) acquireFeature(lic *license, req server.AcquireRequest, now time.Time) (res server.AcquireResult, again bool, err error) {
	// The license's own state comes first, as for the base pool: an
	// inactive or expired license says so, whatever grants it holds.
	if err := lic.lic.CheckUsable(now); err != nil {
		return res, false, err
	}
	pools := lic.covering(req.Feature, req.Version)
	if len(pools) == 0 {
		_, err := lic.lic.GrantsFor(req.Feature, req.Version) // why: no grant of it, or of that version
		if err == nil {
			err = server.FeatureNotLicensed(req.Feature)
		}
		return res, false, err
	}
	ns := now.UnixNano()
	borrowing := req.BorrowFor > 0
	dedupe := ""
	if !borrowing { // a borrowed lease is never shared
		dedupe = server.DedupeKey(lic.lic.LeasingStrategy, req.Fingerprint, req.User, req.Hostname)
	}
	// Dedupe and idempotency are per feature: a lease of the same keys in
	// any pool that may grant is handed back (or replaced, policy.go).
	var replaced []ref
	for _, p := range pools {
		if p.empty() || p.lic.CheckUsable(now) != nil {
			continue
		}
		if r, ok := s.idx.match(p, req.IdempotencyKey, dedupe, borrowing, ns); ok {
			if s.idx.slots.at(r).busy() {
				return res, true, nil
			}
			if !s.replaces(lic, req.Feature, r, &req) {
				res, err := s.renew(r, req.TokenHash, now)
				return res, false, err
			}
			replaced = []ref{r}
			break
		}
	}
	// The site policy, in the same step as the count, over the pools the
	// request may take. Its SEATS_EXHAUSTED is firstFree's own answer
	// (borrow refusals included).
	id := server.Identity{User: req.User, Host: req.Hostname}
	v, judged := s.judgePolicy(lic, req.Feature, id, pools, &counting{now: ns, gone: replaced}, nil)
	if judged && !v.Grant && v.Reason != server.ReasonSeatsExhausted {
		return res, false, v.Err(req.Feature)
	}
	from, err := s.firstFree(pools, req, now, replaced)
	if err != nil {
		return res, false, err
	}
	if judged && !v.Grant { // cannot be: no usable pool had a free seat
		return res, false, v.Err(req.Feature)
	}
	if _, dup := s.idx.lookup(req.LeaseID); dup {
		return res, false, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "lease id already exists")
	}
	// Lapsed leases of the same keys, in any of the pools, end with this
	// grant: they could otherwise revive beside the new lease (invariant 4).
	ending := slices.Clone(replaced)
	for _, p := range pools {
		if p.empty() {
			continue
		}
		keyed, ok := s.idx.lapsed(p, req.IdempotencyKey, dedupe, borrowing, ns)
		if !ok {
			return res, true, nil
		}
		ending = append(ending, keyed...)
	}
	// So do the lapsed leases in the way of the policy's caps and
	// reservations, and those of from whose seats it needs.
	if judged {
		held, ok := s.policyEnds(lic, req.Feature, id, pools, from, v, ns, ending)
		if !ok {
			return res, true, nil
		}
		ending = append(ending, held...)
	}
	displaced, ok := s.idx.toDisplace(from, ns, s.idx.inPool(from, ending))
	if !ok {
		return res, true, nil
	}
	res, err = s.grant(from, req, dedupe, v.Reservation, now, append(ending, displaced...), replaced)
	return res, false, err
}

// coverKey is a request's feature and version, as covering memoizes them.
type coverKey struct{ feature, version string }

// maxCovered bounds a license's memo of covering: past it, answers are
// computed and not kept (versions are the clients' to choose).
const maxCovered = 256

// covering returns the pools of the license's grants that may grant a
// seat of feature at version ("": any), in pick order: the grants
// License.GrantsFor returns, without copying them (lic.grants is in
// server.SortGrants order: by feature, then pick order). Its answer is
// kept until the grants change (syncGrants) and shared: read-only.
func (l *license) covering(feature, version string) []*license {
	k := coverKey{feature, version}
	if out, ok := l.covered[k]; ok {
		return out
	}
	out := l.coveringNow(feature, version)
	if l.covered == nil {
		l.covered = map[coverKey][]*license{}
	}
	if len(l.covered) < maxCovered {
		l.covered[k] = out
	}
	return out
}

// coveringNow is covering computed anew.
func (l *license) coveringNow(feature, version string) []*license {
	ofFeature := l.grantsOf(feature)
	var out []*license
	for _, p := range ofFeature {
		if v := p.grant.Version; version == "" || v == "" || server.CompareVersions(version, v) <= 0 {
			if out == nil {
				out = make([]*license, 0, len(ofFeature))
			}
			out = append(out, p)
		}
	}
	return out
}

// grantsOf is the license's undeleted grants of feature, in pick order
// (lic.grants is in server.SortGrants order: by feature, then pick order).
func (l *license) grantsOf(feature string) []*license {
	lo, _ := slices.BinarySearchFunc(l.grants, feature, func(p *license, f string) int { return strings.Compare(p.grant.Feature, f) })
	hi := lo
	for hi < len(l.grants) && l.grants[hi].grant.Feature == feature {
		hi++
	}
	return l.grants[lo:hi]
}

// firstFree returns the first of the pools (pick order) that may grant
// at now and has a free seat (a borrow: that its pool allows), or the
// refusal: FeatureSeatsExhausted summed over those that were only full;
// the first borrow refusal when none was; or why none may grant. The
// live leases of replaced (ending with the grant) hold no seat.
func (s *Store) firstFree(pools []*license, req server.AcquireRequest, now time.Time, replaced []ref) (*license, error) {
	ns := now.UnixNano()
	inUse, limit, usable := 0, 0, false
	var refusedBorrow error
	for _, p := range pools {
		if p.lic.CheckUsable(now) != nil {
			continue
		}
		usable = true
		if req.BorrowFor > 0 {
			if err := p.lic.CheckBorrow(now, req.BorrowFor, s.idx.borrowedCount(p, ns), s.idx.returnedCount(p, ns)); err != nil {
				refusedBorrow = cmp.Or(refusedBorrow, err)
				continue
			}
		}
		n, most := s.idx.liveCount(p, ns)-len(s.idx.inPool(p, replaced)), p.lic.SeatLimit()
		if n < most {
			return p, nil
		}
		inUse, limit = inUse+n, limit+most
	}
	switch {
	case !usable:
		return nil, unusable(pools, req.Feature, now)
	case refusedBorrow != nil && limit == 0:
		return nil, refusedBorrow
	}
	return nil, server.FeatureSeatsExhausted(req.Feature, inUse, limit)
}

// unusable is why none of the pools may grant at now: the license is
// inactive; else some have yet to start (GrantNotStarted with the
// earliest start); else all have expired.
func unusable(pools []*license, feature string, now time.Time) error {
	first := pools[0].lic.CheckUsable(now)
	if server.ErrorReason(first) == server.ReasonLicenseInactive {
		return first
	}
	var start time.Time
	for _, p := range pools {
		err := p.lic.CheckUsable(now)
		if server.ErrorReason(err) == server.ReasonGrantNotStarted && (start.IsZero() || p.lic.StartsAt.Before(start)) {
			start = p.lic.StartsAt
		}
	}
	if start.IsZero() {
		return first
	}
	return server.GrantNotStarted(feature, start)
}
