package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A site policy (issue 27, invariant 13) as the checker reads it: its own
// statement of the rules, sharing no code with the server's (it is the
// oracle, as compareVersions is for versions).

// RuleKind is what a policy rule does.
type RuleKind string

const (
	Reserve RuleKind = "reserve" // Count seats kept for the subject's members
	Max     RuleKind = "max"     // the subject never holds more than Count
	Include RuleKind = "include" // once a pool has includes, only they are granted
	Exclude RuleKind = "exclude" // never granted; wins over include
)

// SubjectKind is what a rule names.
type SubjectKind string

const (
	User      SubjectKind = "user"       // compared exactly
	Host      SubjectKind = "host"       // compared without case
	Group     SubjectKind = "group"      // a group of users
	HostGroup SubjectKind = "host_group" // a group of hosts
)

// Subject is the user, host or group a rule names.
type Subject struct {
	Kind SubjectKind
	Name string
}

func (s Subject) String() string { return string(s.Kind) + " " + s.Name }

// Rule is one rule of a policy, as the campaign set it.
type Rule struct {
	Kind    RuleKind
	Feature string // "": the license's base pool; else every grant of the feature
	Count   int
	Subject Subject
	// EachMember: a max rule on a group caps each member apart (false:
	// the group as a whole).
	EachMember bool
}

// Policy is one license's site policy: its rules in order and the groups
// they name (members by group name).
type Policy struct {
	Rules  []Rule
	Groups map[string][]string
}

// The refusals a policy gives (ErrorInfo reasons).
const (
	ReasonSeatsExhausted = "SEATS_EXHAUSTED"
	ReasonSeatsReserved  = "SEATS_RESERVED"
	ReasonUserLimit      = "USER_LIMIT"
	ReasonHostLimit      = "HOST_LIMIT"
	ReasonGroupLimit     = "GROUP_LIMIT"
	ReasonNotIncluded    = "NOT_INCLUDED"
	ReasonExcluded       = "EXCLUDED"
)

// PolicyReasons are the refusals only a policy gives.
var PolicyReasons = []string{ReasonSeatsReserved, ReasonUserLimit, ReasonHostLimit, ReasonGroupLimit, ReasonNotIncluded, ReasonExcluded}

// names reports whether the rule's subject is the client user@host: an
// empty user or host is no one's.
func (p Policy) names(s Subject, user, host string) bool {
	host = strings.ToLower(host)
	switch s.Kind {
	case User:
		return user != "" && user == s.Name
	case Host:
		return host != "" && host == strings.ToLower(s.Name)
	case Group:
		return user != "" && slices.Contains(p.Groups[s.Name], user)
	case HostGroup:
		return host != "" && slices.ContainsFunc(p.Groups[s.Name], func(m string) bool { return strings.ToLower(m) == host })
	}
	return false
}

// rules are the indexes of the rules of kind for feature's pool.
func (p Policy) rules(kind RuleKind, feature string) []int {
	var out []int
	for i, r := range p.Rules {
		if r.Kind == kind && r.Feature == feature {
			out = append(out, i)
		}
	}
	return out
}

// excludedBy is the first exclude rule of feature's pool naming the
// client (-1: none).
func (p Policy) excludedBy(feature, user, host string) int {
	for _, i := range p.rules(Exclude, feature) {
		if p.names(p.Rules[i].Subject, user, host) {
			return i
		}
	}
	return -1
}

// included reports whether the client may use feature's pool as far as
// its include rules go (a pool without any includes everyone).
func (p Policy) included(feature, user, host string) bool {
	inc := p.rules(Include, feature)
	return len(inc) == 0 || slices.ContainsFunc(inc, func(i int) bool { return p.names(p.Rules[i].Subject, user, host) })
}

// counter is the counter of max rule i the client counts under, and
// whether it counts under it at all: the rule's own for a user, a host or
// a group as a whole; the member's for a group capped member by member.
func (p Policy) counter(i int, user, host string) (string, bool) {
	r := p.Rules[i]
	if !p.names(r.Subject, user, host) {
		return "", false
	}
	key := strconv.Itoa(i)
	switch {
	case r.EachMember && r.Subject.Kind == Group:
		key += "/" + user
	case r.EachMember && r.Subject.Kind == HostGroup:
		key += "/" + strings.ToLower(host)
	}
	return key, true
}

// capReason is the refusal of max rule r: a user's (or each member of a
// group's) USER_LIMIT, a host's HOST_LIMIT, a group's as a whole
// GROUP_LIMIT.
func capReason(r Rule) string {
	switch {
	case r.Subject.Kind == User || (r.EachMember && r.Subject.Kind == Group):
		return ReasonUserLimit
	case r.Subject.Kind == Host || (r.EachMember && r.Subject.Kind == HostGroup):
		return ReasonHostLimit
	}
	return ReasonGroupLimit
}

// policyPool names the pool a policy's rules judge for the violation
// reports: the license's base pool, or one feature's grants together.
func policyPool(license, feature string) string {
	if feature == "" {
		return license
	}
	return license + " feature " + feature
}

// heldBy is a surely held lease with the client that holds it.
type heldBy struct {
	held
	feature, user, host string
}

// checkPolicies judges every license with a policy (p.Policies) on the
// history and the records:
//
//   - policy-exclude: no client an exclude rule of the pool names was
//     granted (as the history shows it, or as the record does: a grant
//     whose answer was lost counts too);
//   - policy-include: no client outside a pool's include rules was
//     granted (same);
//   - policy-cap: at no instant more leases surely held (as seat-limit
//     counts them) under a max rule's counter than its count: by the
//     user or host it names, by the group's members together, or, for
//     each member, by one member;
//   - policy-reserve: at no instant, for any set S of a base pool's
//     reservations, more leases surely held by clients a member of none
//     of S than the pool's limit less the seats S reserves (every lease is
//     a shared seat, at most limit less all reservations, or a reserved
//     seat of one reservation, at most its count: those outside S hold
//     only shared seats and seats reserved outside S). A feature's
//     reservations are not judged: the seats they count among depend on
//     the version asked (the grants that cover it);
//   - policy-reason: a refusal a policy gives names a rule that applies
//     to the client: EXCLUDED the first exclude rule naming it,
//     NOT_INCLUDED a pool with includes none of which names it (and no
//     exclude does), a cap reason a max rule naming it with that reason,
//     SEATS_RESERVED a reservation of the pool; and a client an exclude
//     names is refused EXCLUDED, and one outside the includes
//     NOT_INCLUDED, never for a reason judged after it (a cap,
//     SEATS_RESERVED, SEATS_EXHAUSTED).
func checkPolicies(byLease map[string][]Op, ops []Op, limits map[string]int, records map[string]Record, p Params) []Violation {
	if len(p.Policies) == 0 {
		return nil
	}
	var out []Violation
	byLicense := map[string][]heldBy{}
	for _, id := range sortedKeys(byLease) {
		lops := byLease[id]
		g, ok := granted(lops)
		if !ok {
			continue
		}
		pol, has := p.Policies[g.License]
		if !has {
			continue
		}
		out = append(out, checkAdmitted(pol, g.License, g.Feature, g.User, g.Host, id, []Op{g})...)
		if h, ok := holding(id, lops, p); ok {
			byLicense[g.License] = append(byLicense[g.License], heldBy{h, g.Feature, g.User, g.Host})
		}
	}
	for _, id := range sortedKeys(records) {
		r := records[id]
		if _, seen := byLease[id]; seen {
			continue // judged from the history above
		}
		license, feature := r.License, ""
		if g, ok := p.Grants[r.License]; ok {
			license, feature = g.License, g.Feature
		}
		if pol, has := p.Policies[license]; has {
			out = append(out, checkAdmitted(pol, license, feature, r.User, r.Host, id, nil)...)
		}
	}
	for _, license := range sortedKeys(p.Policies) {
		pol := p.Policies[license]
		out = append(out, checkCaps(pol, license, byLicense[license])...)
		if limit, ok := limits[license]; ok {
			out = append(out, checkReservations(pol, license, limit, byLicense[license])...)
		}
	}
	for _, op := range ops {
		if pol, has := p.Policies[op.License]; has && op.Outcome == Failed && (op.Kind == Acquire || op.Kind == Wait) {
			if detail := wrongReason(pol, op); detail != "" {
				out = append(out, Violation{Property: "policy-reason", License: policyPool(op.License, op.Feature),
					Detail: detail, Ops: []Op{op}})
			}
		}
	}
	return out
}

// checkAdmitted judges a grant to user@host of feature's pool against the
// pool's excludes and includes.
func checkAdmitted(pol Policy, license, feature, user, host, lease string, ops []Op) []Violation {
	who := fmt.Sprintf("user %q host %q", user, host)
	if i := pol.excludedBy(feature, user, host); i >= 0 {
		return []Violation{{Property: "policy-exclude", License: policyPool(license, feature), Lease: lease,
			Detail: fmt.Sprintf("granted to %s, whom rule %d (exclude %s) excludes", who, i, pol.Rules[i].Subject), Ops: ops}}
	}
	if !pol.included(feature, user, host) {
		return []Violation{{Property: "policy-include", License: policyPool(license, feature), Lease: lease,
			Detail: "granted to " + who + ", whom no include rule of the pool names", Ops: ops}}
	}
	return nil
}

// checkCaps judges every max rule of pol on the leases surely held.
func checkCaps(pol Policy, license string, hs []heldBy) []Violation {
	var out []Violation
	for i, r := range pol.Rules {
		if r.Kind != Max {
			continue
		}
		byCounter := map[string][]held{}
		for _, h := range hs {
			if h.feature != r.Feature {
				continue
			}
			if key, ok := pol.counter(i, h.user, h.host); ok {
				byCounter[key] = append(byCounter[key], h.held)
			}
		}
		for _, key := range sortedKeys(byCounter) {
			if at, open := overLimit(byCounter[key], r.Count); open != nil {
				whom := r.Subject.String()
				if _, member, each := strings.Cut(key, "/"); each {
					whom = fmt.Sprintf("member %q of %s", member, r.Subject)
				}
				out = append(out, violationOf("policy-cap", policyPool(license, r.Feature), open,
					fmt.Sprintf("%d leases held by %s at %s, rule %d caps it at %d", len(open), whom, at.Format("15:04:05.000"), i, r.Count)))
			}
		}
	}
	return out
}

// checkReservations judges the base pool's reservations of pol on the
// leases surely held.
func checkReservations(pol Policy, license string, limit int, hs []heldBy) []Violation {
	res := pol.rules(Reserve, "")
	if len(res) == 0 || len(res) > 16 {
		return nil // more than 16: 65536 sets, more than a campaign needs
	}
	var base []heldBy
	for _, h := range hs {
		if h.feature == "" {
			base = append(base, h)
		}
	}
	for set := 1; set < 1<<len(res); set++ {
		reserved := 0
		var subjects []string
		var in []int
		for k, i := range res {
			if set&(1<<k) != 0 {
				reserved += pol.Rules[i].Count
				subjects = append(subjects, pol.Rules[i].Subject.String())
				in = append(in, i)
			}
		}
		var outside []held
		for _, h := range base {
			if !slices.ContainsFunc(in, func(i int) bool { return pol.names(pol.Rules[i].Subject, h.user, h.host) }) {
				outside = append(outside, h.held)
			}
		}
		if at, open := overLimit(outside, limit-reserved); open != nil {
			// One report per pool is enough to act on.
			return []Violation{violationOf("policy-reserve", license, open,
				fmt.Sprintf("%d leases held at %s by clients of none of %s, which reserve %d of the %d seats",
					len(open), at.Format("15:04:05.000"), strings.Join(subjects, ", "), reserved, limit))}
		}
	}
	return nil
}

// overLimit sweeps intervals (an end before a start at the same instant:
// touching is not overlap) for the first instant more than limit are
// open: that instant and the open intervals, or nil.
func overLimit(hs []held, limit int) (time.Time, []held) {
	type event struct {
		at  time.Time
		add bool
		h   held
	}
	evs := make([]event, 0, 2*len(hs))
	for _, h := range hs {
		evs = append(evs, event{h.from, true, h}, event{h.to, false, h})
	}
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return !evs[i].add && evs[j].add
	})
	var open []held
	for _, e := range evs {
		if !e.add {
			open = slices.DeleteFunc(open, func(x held) bool { return x.lease == e.h.lease })
			continue
		}
		open = append(open, e.h)
		if len(open) > limit {
			return e.at, open
		}
	}
	return time.Time{}, nil
}

func violationOf(property, pool string, open []held, detail string) Violation {
	v := Violation{Property: property, License: pool, Detail: detail}
	for _, x := range open {
		v.Lease += x.lease + " "
		v.Ops = append(v.Ops, x.ops...)
	}
	return v
}

// wrongReason says what is wrong with the reason of a refused acquisition
// of a license with policy pol ("": nothing).
func wrongReason(pol Policy, op Op) string {
	who := fmt.Sprintf("user %q host %q", op.User, op.Host)
	excluded := pol.excludedBy(op.Feature, op.User, op.Host)
	rule := -1
	if op.Rule != "" {
		n, err := strconv.Atoi(op.Rule)
		if err != nil || n < 0 || n >= len(pol.Rules) {
			return fmt.Sprintf("refused %s naming rule %q, which the policy does not have", op.Reason, op.Rule)
		}
		rule = n
	}
	switch op.Reason {
	case ReasonExcluded:
		switch {
		case excluded < 0:
			return fmt.Sprintf("refused EXCLUDED, but no exclude rule of the pool names %s", who)
		case rule != excluded:
			return fmt.Sprintf("refused EXCLUDED naming rule %d, but the first exclude naming %s is rule %d", rule, who, excluded)
		}
		return ""
	case ReasonNotIncluded, ReasonUserLimit, ReasonHostLimit, ReasonGroupLimit, ReasonSeatsReserved, ReasonSeatsExhausted:
		if excluded >= 0 {
			return fmt.Sprintf("refused %s, but rule %d excludes %s (judged first)", op.Reason, excluded, who)
		}
	default:
		return "" // not the policy's: license inactive, version not licensed, unavailable...
	}
	included := pol.included(op.Feature, op.User, op.Host)
	switch op.Reason {
	case ReasonNotIncluded:
		if included {
			return fmt.Sprintf("refused NOT_INCLUDED, but %s is included", who)
		}
		return ""
	}
	if !included {
		return fmt.Sprintf("refused %s, but %s is not included (judged first)", op.Reason, who)
	}
	if op.Reason == ReasonSeatsExhausted {
		return "" // counts, not the policy (the seat limit is judged apart)
	}
	if op.Reason == ReasonSeatsReserved {
		if rule < 0 || pol.Rules[rule].Kind != Reserve || pol.Rules[rule].Feature != op.Feature {
			return fmt.Sprintf("refused SEATS_RESERVED naming rule %q, not a reservation of the pool", op.Rule)
		}
		return ""
	}
	if rule < 0 {
		return fmt.Sprintf("refused %s naming no rule", op.Reason)
	}
	r := pol.Rules[rule]
	_, counts := pol.counter(rule, op.User, op.Host)
	switch {
	case r.Kind != Max || r.Feature != op.Feature:
		return fmt.Sprintf("refused %s naming rule %d, not a max rule of the pool", op.Reason, rule)
	case !counts:
		return fmt.Sprintf("refused %s naming rule %d (max %s), which does not name %s", op.Reason, rule, r.Subject, who)
	case capReason(r) != op.Reason:
		return fmt.Sprintf("refused %s naming rule %d, whose refusal is %s", op.Reason, rule, capReason(r))
	}
	return ""
}

// CheckRefusals judges, in a history without faults, that every refusal
// of a base pool's seats or of a policy had its cause: at some instant
// between its invocation and its answer, the leases that may have been
// counted were enough to refuse (property "refusal-cause"). A lease may
// count from its acquisition's invocation until the answer that told its
// client it ended (a release answered, an end observed: an observed end
// is final) or, never told, to the end of the history; an acquisition
// answered unknown may have granted one. It proves nothing under faults:
// a loss of Redis may give back time that no answer showed.
//
//   - SEATS_EXHAUSTED of a base pool: as many leases as its limit;
//   - SEATS_RESERVED of a base pool: as many as its limit less every seat
//     its reservations keep (a non-member is refused only once the
//     shared seats are taken);
//   - USER_LIMIT, HOST_LIMIT, GROUP_LIMIT: as many leases under the
//     client's counter of the rule named as its count.
func CheckRefusals(ops []Op, limits map[string]int, p Params) []Violation {
	type maybe struct {
		op         Op // the acquisition
		from, to   time.Time
		user, host string
	}
	forever := time.Time{}
	for _, op := range ops {
		if op.End.After(forever) {
			forever = op.End
		}
	}
	forever = forever.Add(time.Hour)
	byLease := map[string][]Op{}
	for _, op := range ops {
		if op.Lease != "" {
			byLease[op.Lease] = append(byLease[op.Lease], op)
		}
	}
	var leases []maybe
	for _, op := range ops {
		if (op.Kind != Acquire && op.Kind != Wait) || op.Outcome == Failed {
			continue
		}
		m := maybe{op: op, from: op.Start, to: forever, user: op.User, host: op.Host}
		if op.Outcome == OK {
			for _, o := range byLease[op.Lease] {
				if o.tellsEnded() && o.End.Before(m.to) {
					m.to = o.End
				}
			}
		}
		leases = append(leases, m)
	}
	// most is the largest number of the leases that keep that may have
	// been counted at one instant of [from, to].
	most := func(from, to time.Time, keep func(maybe) bool) int {
		type event struct {
			at   time.Time
			step int
		}
		var evs []event
		for _, m := range leases {
			if keep(m) && !m.from.After(to) && m.to.After(from) {
				evs = append(evs, event{maxTime(m.from, from), 1}, event{m.to, -1})
			}
		}
		// Ends before starts at the same instant, as overLimit.
		sort.Slice(evs, func(i, j int) bool {
			if !evs[i].at.Equal(evs[j].at) {
				return evs[i].at.Before(evs[j].at)
			}
			return evs[i].step < evs[j].step
		})
		n, top := 0, 0
		for _, e := range evs {
			n += e.step
			top = max(top, n)
		}
		return top
	}
	var out []Violation
	for _, f := range ops {
		if (f.Kind != Acquire && f.Kind != Wait) || f.Outcome != Failed {
			continue
		}
		pol, hasPolicy := p.Policies[f.License]
		limit, hasLimit := limits[f.License]
		samePool := func(m maybe) bool { return m.op.License == f.License && m.op.Feature == f.Feature }
		need, keep := 0, samePool
		switch {
		case f.Feature == "" && hasLimit && f.Reason == ReasonSeatsExhausted:
			need = limit
		case f.Feature == "" && hasLimit && hasPolicy && f.Reason == ReasonSeatsReserved:
			need = limit
			for _, i := range pol.rules(Reserve, "") {
				need -= pol.Rules[i].Count
			}
		case hasPolicy && (f.Reason == ReasonUserLimit || f.Reason == ReasonHostLimit || f.Reason == ReasonGroupLimit):
			rule, err := strconv.Atoi(f.Rule)
			if err != nil || rule < 0 || rule >= len(pol.Rules) {
				continue // policy-reason's to report
			}
			key, ok := pol.counter(rule, f.User, f.Host)
			if !ok {
				continue
			}
			need = pol.Rules[rule].Count
			keep = func(m maybe) bool {
				k, ok := pol.counter(rule, m.user, m.host)
				return samePool(m) && ok && k == key
			}
		default:
			continue
		}
		if got := most(f.Start, f.End, keep); got < need {
			out = append(out, Violation{Property: "refusal-cause", License: policyPool(f.License, f.Feature),
				Detail: fmt.Sprintf("refused %s with at most %d leases that may have counted, %d needed", f.Reason, got, need),
				Ops:    []Op{f}})
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Holder is a lease held at one instant, for CheckHolders: its id, the
// client it was granted to, its feature ("" the base pool), and the
// reservation the store says it took (Reserved: the index of a reserve
// rule of pol, -1 a shared seat).
type Holder struct {
	Lease, User, Host, Feature string
	Reserved                   int
}

// CheckHolders judges the leases a license with policy pol holds at one
// instant, at (a snapshot of the record, whose active leases all count in
// the live state: a grant is recorded after it counts, an end before it
// stops counting), its base pool of limit seats: policy-exclude,
// policy-include, policy-cap and policy-reserve as Check judges them at
// one instant, and the store's own account of reserved seats
// ("policy-reserved-seat"): a lease holds a reserved seat only of a
// reservation of its pool that names its client, no reservation has more
// leases than it keeps, and the shared seats of the base pool hold at
// most limit less all reservations.
func CheckHolders(pol Policy, license string, limit int, at time.Time, hs []Holder) []Violation {
	var out []Violation
	now := at
	var holding []heldBy
	perReservation := map[int]int{}
	shared := 0
	for _, h := range hs {
		out = append(out, checkAdmitted(pol, license, h.Feature, h.User, h.Host, h.Lease, nil)...)
		holding = append(holding, heldBy{held: held{lease: h.Lease, from: now, to: now.Add(time.Nanosecond)},
			feature: h.Feature, user: h.User, host: h.Host})
		bad := func(detail string) {
			out = append(out, Violation{Property: "policy-reserved-seat", License: policyPool(license, h.Feature), Lease: h.Lease, Detail: detail})
		}
		switch {
		case h.Reserved < 0 && h.Feature == "":
			shared++
		case h.Reserved < 0:
		case h.Reserved >= len(pol.Rules) || pol.Rules[h.Reserved].Kind != Reserve || pol.Rules[h.Reserved].Feature != h.Feature:
			bad(fmt.Sprintf("holds a seat of rule %d, not a reservation of its pool", h.Reserved))
		case !pol.names(pol.Rules[h.Reserved].Subject, h.User, h.Host):
			bad(fmt.Sprintf("user %q host %q holds a seat reserved for %s", h.User, h.Host, pol.Rules[h.Reserved].Subject))
		default:
			perReservation[h.Reserved]++
		}
	}
	out = append(out, checkCaps(pol, license, holding)...)
	out = append(out, checkReservations(pol, license, limit, holding)...)
	kept := 0
	for i, r := range pol.Rules {
		if r.Kind != Reserve {
			continue
		}
		if r.Feature == "" {
			kept += r.Count
		}
		if n := perReservation[i]; n > r.Count {
			out = append(out, Violation{Property: "policy-reserved-seat", License: policyPool(license, r.Feature),
				Detail: fmt.Sprintf("%d leases hold the %d seats rule %d reserves for %s", n, r.Count, i, r.Subject)})
		}
	}
	if shared > limit-kept {
		out = append(out, Violation{Property: "policy-reserved-seat", License: license,
			Detail: fmt.Sprintf("%d leases hold shared seats of the base pool, whose reservations leave %d of %d", shared, limit-kept, limit)})
	}
	return out
}
