package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A site policy (License.Policy) says who may use a license's seats and
// how many, as a FlexNet options file does: reserve seats for a user,
// host or group, cap what one may hold, include or exclude clients. A
// client is the user and hostname its acquisition claims (Identity).
//
// The stores judge it in the same atomic step as the seat count: Compile
// once per license version, Decide per acquisition, then Judge (or its
// store-side twin) with the live counts.

// SubjectKind is what a policy rule names.
type SubjectKind string

const (
	SubjectUser      SubjectKind = "user"       // users compare exactly
	SubjectHost      SubjectKind = "host"       // hostnames compare without case (DNS)
	SubjectGroup     SubjectKind = "group"      // a Group of users
	SubjectHostGroup SubjectKind = "host_group" // a Group of hosts
)

// IsGroup reports whether the kind names a tenant Group.
func (k SubjectKind) IsGroup() bool { return k == SubjectGroup || k == SubjectHostGroup }

// Subject is the user, host or group a rule applies to.
type Subject struct {
	Kind SubjectKind `json:"kind"`
	Name string      `json:"name"`
}

// String is the subject as messages show it: "group night".
func (s Subject) String() string {
	if s.Kind == SubjectHostGroup {
		return "host group " + s.Name
	}
	return string(s.Kind) + " " + s.Name
}

// canonical is the subject as compared: hostnames in lower case.
func (s Subject) canonical() Subject {
	if s.Kind == SubjectHost {
		s.Name = strings.ToLower(s.Name)
	}
	return s
}

// RuleKind is what a policy rule does.
type RuleKind string

const (
	// RuleReserve keeps Count seats for the subject: others may not take them.
	RuleReserve RuleKind = "reserve"
	// RuleMax caps the seats the subject may hold at Count.
	RuleMax RuleKind = "max"
	// RuleInclude: once a feature has include rules, only the subjects they
	// name may use it.
	RuleInclude RuleKind = "include"
	// RuleExclude: the subject may not use the feature; it wins over include.
	RuleExclude RuleKind = "exclude"
)

// PolicyRule is one rule of a site policy.
type PolicyRule struct {
	Kind RuleKind `json:"kind"`
	// Feature is "" for the license's base pool (License.Seats), else a
	// feature of the license: the rule applies to all its grants together.
	Feature string `json:"feature,omitempty"`
	// Count is the seats reserved (reserve) or allowed (max), at least 1;
	// 0 for include and exclude.
	Count   int     `json:"count,omitempty"`
	Subject Subject `json:"subject"`
	// EachMember makes a max rule on a group or host group cap each member
	// apart; false caps the group as a whole (FlexNet's MAX on a GROUP).
	EachMember bool `json:"each_member,omitempty"`
}

// Linger keeps a released seat of the feature ("": the base pool) held
// for Duration after its release (not enforced yet; validated only).
type Linger struct {
	Feature  string        `json:"feature,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Priority sets the level at which the subject waits for a seat of the
// feature ("": the base pool) in WaitForSeat's queue (priority.go).
type Priority struct {
	Feature string  `json:"feature,omitempty"`
	Subject Subject `json:"subject"`
	Level   int     `json:"level"`
}

// Policy is a license's site policy.
type Policy struct {
	Rules      []PolicyRule `json:"rules,omitempty"`
	Linger     []Linger     `json:"linger,omitempty"`
	Priorities []Priority   `json:"priorities,omitempty"`
	// Groups are the tenant's groups the rules name, as they were when the
	// store last wrote the license: a change of a group rewrites every
	// license whose policy names it, so that deciding needs no other read.
	// The stores fill them; Validate takes the tenant's groups apart.
	Groups []Group `json:"groups,omitempty"`
	// UpdatedAt is when the policy was last set: the service sets it, the
	// stores keep it as given (the API's LicensePolicy.update_time).
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Group is a tenant's named set of users (Kind group) or hosts (Kind
// host_group), shared by the policies of its licenses: FlexNet's GROUP and
// HOST_GROUP. Group names are unique in a tenant whatever their kind.
type Group struct {
	TenantID  string      `json:"tenant_id"`
	Name      string      `json:"name"`
	Kind      SubjectKind `json:"kind"`
	Members   []string    `json:"members,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// Bounds of a site policy and of groups: a policy is decided on every
// acquisition, and a group change rewrites every license naming it.
const (
	MaxPolicyRules   = 1000
	MaxTenantGroups  = 1000
	MaxGroupMembers  = 10_000
	MaxPolicyName    = 128 // bytes of a subject, group or member name
	MaxPolicyCount   = 1_000_000
	MaxPolicyLinger  = 24 * time.Hour
	MaxPolicyLingers = MaxGrantsPerLicense + 1 // one per feature and the base pool
)

// CheckPolicyName refuses a user, host or group name that is empty, longer
// than MaxPolicyName bytes, not UTF-8, holds a control or other
// unprintable character, or begins or ends with a space (a name that
// differs from the one a client claims by a space would never match).
func CheckPolicyName(field, name string) error {
	switch {
	case name == "":
		return Invalid(field, "must not be empty")
	case len(name) > MaxPolicyName:
		return Invalid(field, "must be at most %d bytes", MaxPolicyName)
	case !utf8.ValidString(name):
		return Invalid(field, "must be UTF-8")
	case strings.TrimSpace(name) != name:
		return Invalid(field, "must not begin or end with a space (got %q)", name)
	}
	for _, c := range name {
		if !unicode.IsPrint(c) {
			return Invalid(field, "must be printable characters, no control characters (got %q)", name)
		}
	}
	return nil
}

// CheckGroupName is CheckPolicyName for a group's name, which also may not
// hold a '/': the REST API names a group in its path
// (/v1/admin/groups/{name}), where no '/' can be part of one name.
func CheckGroupName(field, name string) error {
	if err := CheckPolicyName(field, name); err != nil {
		return err
	}
	if strings.Contains(name, "/") {
		return Invalid(field, "must not contain '/': the REST API names a group in its path (got %q)", name)
	}
	return nil
}

// Validate checks a group's own fields, naming the first bad one as
// field+"."+name ("group.members[3]"). A group has at least one member: a
// group of nobody would reserve seats for no one or, included, lock
// everyone out.
func (g *Group) Validate(field string) error {
	if err := CheckGroupName(field+".name", g.Name); err != nil {
		return err
	}
	if !g.Kind.IsGroup() {
		return Invalid(field+".kind", "must be group or host_group (got %q)", g.Kind)
	}
	switch {
	case len(g.Members) == 0:
		return Invalid(field+".members", "must hold at least one member")
	case len(g.Members) > MaxGroupMembers:
		return Invalid(field+".members", "must be at most %d members", MaxGroupMembers)
	}
	seen := make(map[string]int, len(g.Members))
	for i, m := range g.Members {
		f := fmt.Sprintf("%s.members[%d]", field, i)
		if err := CheckPolicyName(f, m); err != nil {
			return err
		}
		if g.Kind == SubjectHostGroup {
			m = strings.ToLower(m)
		}
		if j, dup := seen[m]; dup {
			return Invalid(f, "%q is listed twice (also members[%d])", g.Members[i], j)
		}
		seen[m] = i
	}
	return nil
}

// Validate checks the policy against its license l and the tenant's
// groups by name, naming the first bad field ("rules[3].subject.name"):
// every rule's kind, feature (one the license holds a grant of, or "" for
// the base pool), count and subject (an existing group of the right
// kind); no rule twice; and the reservations of each pool within its
// seats (a feature's: its grants' seats summed, overdraft not counted). A
// nil policy is valid. Policy.Groups is not looked at: the stores fill it.
func (p *Policy) Validate(l *License, groups map[string]Group) error {
	if p == nil {
		return nil
	}
	seats := map[string]int{"": l.Seats} // by feature; "" the base pool
	for _, g := range l.Grants {
		seats[g.Feature] += g.Seats
	}
	checkFeature := func(field, feature string) error {
		if _, ok := seats[feature]; !ok {
			return Invalid(field, "license has no grant of feature %q", feature)
		}
		return nil
	}
	if len(p.Rules) > MaxPolicyRules {
		return Invalid("rules", "must be at most %d rules", MaxPolicyRules)
	}
	type ruleKey struct {
		kind    RuleKind
		feature string
		subject Subject
		each    bool
	}
	seen := make(map[ruleKey]int, len(p.Rules))
	reserved := map[string]int{}
	var pools []string // reserved pools in rule order: the first too full is named
	for i, r := range p.Rules {
		f := fmt.Sprintf("rules[%d]", i)
		switch r.Kind {
		case RuleReserve, RuleMax:
			switch {
			case r.Count < 1:
				return Invalid(f+".count", "must be at least 1")
			case r.Count > MaxPolicyCount:
				return Invalid(f+".count", "must be at most %d", MaxPolicyCount)
			}
		case RuleInclude, RuleExclude:
			if r.Count != 0 {
				return Invalid(f+".count", "must be 0 for an %s rule", r.Kind)
			}
		default:
			return Invalid(f+".kind", "must be reserve, max, include or exclude (got %q)", r.Kind)
		}
		if err := checkFeature(f+".feature", r.Feature); err != nil {
			return err
		}
		if err := checkSubject(f+".subject", r.Subject, groups); err != nil {
			return err
		}
		if r.EachMember && (r.Kind != RuleMax || !r.Subject.Kind.IsGroup()) {
			return Invalid(f+".each_member", "only a max rule on a group or host_group may count each member apart")
		}
		k := ruleKey{r.Kind, r.Feature, r.Subject.canonical(), r.EachMember}
		if j, dup := seen[k]; dup {
			return Invalid(f, "duplicates rules[%d]", j)
		}
		seen[k] = i
		if r.Kind == RuleReserve {
			if _, ok := reserved[r.Feature]; !ok {
				pools = append(pools, r.Feature)
			}
			reserved[r.Feature] += r.Count
		}
	}
	for _, feature := range pools {
		if sum := reserved[feature]; sum > seats[feature] {
			return Invalid("rules", "reservations of %s sum to %d, more than its %d seats", poolName(feature), sum, seats[feature])
		}
	}
	if len(p.Linger) > MaxPolicyLingers {
		return Invalid("linger", "must be at most %d entries", MaxPolicyLingers)
	}
	lingers := make(map[string]int, len(p.Linger))
	for i, lg := range p.Linger {
		f := fmt.Sprintf("linger[%d]", i)
		if err := checkFeature(f+".feature", lg.Feature); err != nil {
			return err
		}
		switch {
		case lg.Duration < 0:
			return Invalid(f+".duration", "must not be negative")
		case lg.Duration > MaxPolicyLinger:
			return Invalid(f+".duration", "must be at most %s", MaxPolicyLinger)
		}
		if j, dup := lingers[lg.Feature]; dup {
			return Invalid(f+".feature", "%s already has a linger (linger[%d])", poolName(lg.Feature), j)
		}
		lingers[lg.Feature] = i
	}
	if len(p.Priorities) > MaxPolicyRules {
		return Invalid("priorities", "must be at most %d entries", MaxPolicyRules)
	}
	type prioKey struct {
		feature string
		subject Subject
	}
	prios := make(map[prioKey]int, len(p.Priorities))
	for i, pr := range p.Priorities {
		f := fmt.Sprintf("priorities[%d]", i)
		if err := checkFeature(f+".feature", pr.Feature); err != nil {
			return err
		}
		if err := checkSubject(f+".subject", pr.Subject, groups); err != nil {
			return err
		}
		if err := CheckPriorityLevel(f+".level", pr.Level); err != nil {
			return err
		}
		k := prioKey{pr.Feature, pr.Subject.canonical()}
		if j, dup := prios[k]; dup {
			return Invalid(f, "duplicates priorities[%d]", j)
		}
		prios[k] = i
	}
	return nil
}

// CheckChange refuses a change of the license's seats or grants that
// would leave its policy p one that Validate refuses: next is the license
// as the change would leave it, prev as it is. The groups are p's own
// (Policy.Groups: the stores keep them current). The error names the
// rule as "policy."+Validate's field (INVALID_ARGUMENT), and nothing may
// change. A policy that prev already breaks (kept from before this
// check) does not block other changes.
func (p *Policy) CheckChange(prev, next *License) error {
	if p == nil {
		return nil
	}
	groups := make(map[string]Group, len(p.Groups))
	for _, g := range p.Groups {
		groups[g.Name] = g
	}
	err := p.Validate(next, groups)
	if err == nil || p.Validate(prev, groups) != nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	return Invalid("policy."+e.Field, "%s after this change: change the license's site policy first", e.Message)
}

// checkSubject refuses a subject of an unknown kind, with a bad name, or
// naming a group the tenant does not have (or has of the other kind).
func checkSubject(field string, s Subject, groups map[string]Group) error {
	switch s.Kind {
	case SubjectUser, SubjectHost, SubjectGroup, SubjectHostGroup:
	default:
		return Invalid(field+".kind", "must be user, host, group or host_group (got %q)", s.Kind)
	}
	if !s.Kind.IsGroup() {
		return CheckPolicyName(field+".name", s.Name)
	}
	if err := CheckGroupName(field+".name", s.Name); err != nil {
		return err
	}
	g, ok := groups[s.Name]
	if !ok {
		return Invalid(field+".name", "%s %q does not exist", s.Kind, s.Name)
	}
	if g.Kind != s.Kind {
		return Invalid(field+".name", "%q is a %s, not a %s", s.Name, g.Kind, s.Kind)
	}
	return nil
}

// poolName names a pool in messages: a feature, or "the base pool".
func poolName(feature string) string {
	if feature == "" {
		return "the base pool"
	}
	return feature
}

// Identity is who asks for a seat: the user and hostname the acquisition
// claims.
type Identity struct{ User, Host string }

// Decision is what a policy says of one acquisition of one feature, before
// any count: a Refusal, or the caps that apply and the reservations of
// the feature. Judge (or a store, atomically with its counts) turns it
// into a verdict.
type Decision struct {
	Refusal *PolicyRefusal
	// Caps are the max rules that apply to this identity; a granted lease
	// counts under each Key.
	Caps []Cap
	// Reservations are every reserve rule of the feature, in rule order:
	// their unused seats are kept from whoever is not a Member.
	Reservations []Reservation
}

// Cap is one max rule as it applies to one identity. Key is its counter:
// it depends on the subject alone (never the rule's index), so a lease
// keeps counting when rules are reordered; a store keeps counters per
// license and feature.
type Cap struct {
	Key        string
	Limit      int
	Reason     string // ReasonUserLimit, ReasonHostLimit or ReasonGroupLimit
	Rule       int    // index in Policy.Rules
	Subject    Subject
	EachMember bool
}

// Reservation is one reserve rule of a feature; Member says whether the
// identity decided for may take its seats. Key is its held-seat counter,
// from the subject alone as Cap.Key.
type Reservation struct {
	Key     string
	Seats   int
	Member  bool
	Rule    int
	Subject Subject
}

// PolicyRefusal refuses an identity before any count: ReasonExcluded
// (Rule: the first exclude rule naming it) or ReasonNotIncluded (Rule -1:
// the feature has include rules and none names it).
type PolicyRefusal struct {
	Reason  string
	Rule    int
	Subject Subject
}

// CompiledPolicy is a Policy indexed by feature for Decide, which runs on
// every acquisition of its license. It is immutable: safe for concurrent
// use. A nil *CompiledPolicy is no policy.
type CompiledPolicy struct {
	features map[string]*featureRules
}

// featureRules are one feature's rules by kind, each in rule order.
type featureRules struct {
	exclude, include, max, reserve []compiledRule
}

type compiledRule struct {
	index   int
	rule    PolicyRule
	name    string              // the subject's name as compared (hosts lower-cased)
	members map[string]struct{} // a group subject's members as compared
	key     string              // counter key; for an each-member cap, its prefix
	reason  string              // a cap's
}

// matches reports whether the rule's subject is the identity (host
// already lower-cased).
func (r *compiledRule) matches(user, host string) bool {
	switch r.rule.Subject.Kind {
	case SubjectUser:
		return user != "" && user == r.name
	case SubjectHost:
		return host != "" && host == r.name
	case SubjectGroup:
		_, ok := r.members[user]
		return user != "" && ok
	case SubjectHostGroup:
		_, ok := r.members[host]
		return host != "" && ok
	}
	return false
}

// Compile indexes a (valid) policy for Decide; nil for a nil policy. Group
// subjects take their members from p.Groups; a group missing there, or of
// the other kind, has none.
func Compile(p *Policy) *CompiledPolicy {
	if p == nil {
		return nil
	}
	groups := make(map[string]map[string]struct{}, len(p.Groups))
	kinds := make(map[string]SubjectKind, len(p.Groups))
	for _, g := range p.Groups {
		set := make(map[string]struct{}, len(g.Members))
		for _, m := range g.Members {
			if g.Kind == SubjectHostGroup {
				m = strings.ToLower(m)
			}
			set[m] = struct{}{}
		}
		groups[g.Name], kinds[g.Name] = set, g.Kind
	}
	c := &CompiledPolicy{features: map[string]*featureRules{}}
	for i, r := range p.Rules {
		cr := compiledRule{index: i, rule: r, name: r.Subject.Name}
		switch r.Subject.Kind {
		case SubjectHost:
			cr.name = strings.ToLower(r.Subject.Name)
		case SubjectGroup, SubjectHostGroup:
			if kinds[r.Subject.Name] == r.Subject.Kind {
				cr.members = groups[r.Subject.Name]
			}
		}
		fr := c.features[r.Feature]
		if fr == nil {
			fr = &featureRules{}
			c.features[r.Feature] = fr
		}
		switch r.Kind {
		case RuleExclude:
			fr.exclude = append(fr.exclude, cr)
		case RuleInclude:
			fr.include = append(fr.include, cr)
		case RuleMax:
			cr.key, cr.reason = capKey(r.Subject, cr.name, r.EachMember)
			fr.max = append(fr.max, cr)
		case RuleReserve:
			cr.key = reservationKey(r.Subject.Kind, cr.name)
			fr.reserve = append(fr.reserve, cr)
		}
	}
	return c
}

// reservationPrefix begins every reservation's key: "r:", the subject's
// kind, a NUL, its name as compared (reservationKey).
const reservationPrefix = "r:"

// reservationKey is a reserve rule's held-seat counter key (Reservation.Key,
// Lease.Reservation): from the subject's kind and its name as compared, so
// that ReservationSubject can read the subject back from a lease.
func reservationKey(kind SubjectKind, name string) string {
	return reservationPrefix + string(kind) + "\x00" + name
}

// ReservationSubject is whose reserved seat a lease holds, read from its
// Lease.Reservation (a host's name as compared: in lower case). ok is
// false for "" (a shared seat) and for a key reservationKey did not make.
func ReservationSubject(key string) (s Subject, ok bool) {
	rest, found := strings.CutPrefix(key, reservationPrefix)
	if !found {
		return Subject{}, false
	}
	kind, name, found := strings.Cut(rest, "\x00")
	switch k := SubjectKind(kind); {
	case !found || name == "":
		return Subject{}, false
	case k == SubjectUser, k == SubjectHost, k == SubjectGroup, k == SubjectHostGroup:
		return Subject{Kind: k, Name: name}, true
	}
	return Subject{}, false
}

// capKey is a max rule's counter key (for each member: its prefix, the
// member's name follows) and the reason it refuses with. A cap on each
// member of a group refuses as a user's (or host's) own cap would.
func capKey(s Subject, name string, each bool) (key, reason string) {
	switch {
	case s.Kind == SubjectUser:
		return "u:" + name, ReasonUserLimit
	case s.Kind == SubjectHost:
		return "h:" + name, ReasonHostLimit
	case s.Kind == SubjectGroup && each:
		return "gu:" + name + "\x00", ReasonUserLimit
	case s.Kind == SubjectHostGroup && each:
		return "hh:" + name + "\x00", ReasonHostLimit
	case s.Kind == SubjectGroup:
		return "g:" + name, ReasonGroupLimit
	}
	return "hg:" + name, ReasonGroupLimit
}

// HasRules reports whether the policy has rules of feature ("": the base
// pool): whether it judges that pool's acquisitions at all.
func (c *CompiledPolicy) HasRules(feature string) bool {
	return c != nil && c.features[feature] != nil
}

// Decide says what the policy makes of id acquiring a seat of feature ("":
// the base pool). Rules of other features never apply; a feature with no
// rules (or a nil policy) gives the zero Decision.
func (c *CompiledPolicy) Decide(feature string, id Identity) Decision {
	if c == nil {
		return Decision{}
	}
	fr := c.features[feature]
	if fr == nil {
		return Decision{}
	}
	host := strings.ToLower(id.Host)
	for i := range fr.exclude {
		if r := &fr.exclude[i]; r.matches(id.User, host) {
			return Decision{Refusal: &PolicyRefusal{Reason: ReasonExcluded, Rule: r.index, Subject: r.rule.Subject}}
		}
	}
	if len(fr.include) > 0 {
		included := false
		for i := range fr.include {
			if fr.include[i].matches(id.User, host) {
				included = true
				break
			}
		}
		if !included {
			return Decision{Refusal: &PolicyRefusal{Reason: ReasonNotIncluded, Rule: -1}}
		}
	}
	var d Decision
	for i := range fr.max {
		r := &fr.max[i]
		if !r.matches(id.User, host) {
			continue
		}
		key := r.key
		switch {
		case r.rule.EachMember && r.rule.Subject.Kind == SubjectGroup:
			key += id.User
		case r.rule.EachMember:
			key += host
		}
		if d.Caps == nil {
			d.Caps = make([]Cap, 0, len(fr.max)-i)
		}
		d.Caps = append(d.Caps, Cap{Key: key, Limit: r.rule.Count, Reason: r.reason, Rule: r.index, Subject: r.rule.Subject, EachMember: r.rule.EachMember})
	}
	if len(fr.reserve) > 0 {
		d.Reservations = make([]Reservation, len(fr.reserve))
		for i := range fr.reserve {
			r := &fr.reserve[i]
			d.Reservations[i] = Reservation{Key: r.key, Seats: r.rule.Count, Member: r.matches(id.User, host), Rule: r.index, Subject: r.rule.Subject}
		}
	}
	return d
}

// Verdict is Judge's answer. Granted: Reservation is the key of the
// reservation whose seat the lease takes ("" a shared seat). Refused:
// Reason (a Reason* constant), with Rule and Subject of the rule that
// refused (Rule -1: none), InUse of Limit the figures that refused (a
// cap's count and limit, or the pool's), and Detail in words.
type Verdict struct {
	Grant       bool
	Reservation string
	Reason      string
	Rule        int
	Subject     Subject
	InUse       int
	Limit       int
	Detail      string
}

// Judge decides an acquisition given its Decision and the live counts of
// its pool: n leases of limit (for a feature: summed over the grants it may
// take), caps[key] the live leases under each Cap key, held[key] the live
// leases holding each reservation's seats. In order:
//  1. a Refusal refuses;
//  2. a cap at its limit refuses with its reason;
//  3. a member of a reservation with a seat unused takes that seat (the
//     first such in rule order) if n < limit; anyone else takes a shared
//     seat only if the unused reserved seats leave one: n + unused < limit,
//     else SEATS_RESERVED (or SEATS_EXHAUSTED when n >= limit).
//
// A granted lease then counts under every Cap key of d and under the
// reservation it took. The stores do the same atomically with their
// counts; Judge is their shared statement (and the embedded store's).
func Judge(d Decision, n, limit int, caps, held map[string]int) Verdict {
	if r := d.Refusal; r != nil {
		v := Verdict{Reason: r.Reason, Rule: r.Rule, Subject: r.Subject, InUse: n, Limit: limit}
		if r.Reason == ReasonExcluded {
			v.Detail = fmt.Sprintf("rule %d excludes %s", r.Rule, r.Subject)
		} else {
			v.Detail = "only those its include rules name may use it"
		}
		return v
	}
	for _, c := range d.Caps {
		if in := caps[c.Key]; in >= c.Limit {
			v := Verdict{Reason: c.Reason, Rule: c.Rule, Subject: c.Subject, InUse: in, Limit: c.Limit}
			if c.EachMember {
				v.Detail = fmt.Sprintf("each member of %s may hold %d seats, and this one holds %d (rule %d)", c.Subject, c.Limit, in, c.Rule)
			} else {
				v.Detail = fmt.Sprintf("%s holds %d of the %d seats it may hold (rule %d)", c.Subject, in, c.Limit, c.Rule)
			}
			return v
		}
	}
	unused, take := 0, -1
	for i, r := range d.Reservations {
		free := max(0, r.Seats-held[r.Key])
		unused += free
		if take < 0 && r.Member && free > 0 {
			take = i
		}
	}
	switch {
	case n >= limit:
		return Verdict{Reason: ReasonSeatsExhausted, Rule: -1, InUse: n, Limit: limit, Detail: fmt.Sprintf("%d of %d in use", n, limit)}
	case take >= 0:
		return Verdict{Grant: true, Reservation: d.Reservations[take].Key, Rule: -1, InUse: n, Limit: limit}
	case n+unused < limit:
		return Verdict{Grant: true, Rule: -1, InUse: n, Limit: limit}
	}
	// Every seat left is kept for reservations this identity is not a
	// member of (or whose seats it already holds): name them.
	v := Verdict{Reason: ReasonSeatsReserved, Rule: -1, InUse: n, Limit: limit}
	var whom []string
	for _, r := range d.Reservations {
		if r.Seats-held[r.Key] > 0 {
			if v.Rule < 0 {
				v.Rule, v.Subject = r.Rule, r.Subject
			}
			whom = append(whom, r.Subject.String())
		}
	}
	left := limit - n
	v.Detail = fmt.Sprintf("%d of %d remaining seats are reserved for %s", min(left, unused), left, strings.Join(whom, ", "))
	return v
}

// Err is the error a client gets for a refused verdict, nil for a grant:
// feature is the one asked for ("" the base pool). Its metadata holds the
// rule's index and subject (when a rule refused), in_use and limit.
func (v Verdict) Err(feature string) error {
	if v.Grant {
		return nil
	}
	pool := "the license"
	if feature != "" {
		pool = fmt.Sprintf("feature %q", feature)
	}
	var e *Error
	switch v.Reason {
	case ReasonSeatsExhausted:
		if feature == "" {
			return SeatsExhausted(v.InUse, v.Limit)
		}
		return FeatureSeatsExhausted(feature, v.InUse, v.Limit)
	case ReasonExcluded:
		e = &Error{Code: EPERMISSION, Reason: ReasonExcluded}
		e.Message = fmt.Sprintf("the site policy excludes this client from %s: %s", pool, v.Detail)
	case ReasonNotIncluded:
		e = &Error{Code: EPERMISSION, Reason: ReasonNotIncluded}
		e.Message = fmt.Sprintf("the site policy does not include this client for %s: %s", pool, v.Detail)
	case ReasonUserLimit:
		e = &Error{Code: EEXHAUSTED, Reason: ReasonUserLimit}
	case ReasonHostLimit:
		e = &Error{Code: EEXHAUSTED, Reason: ReasonHostLimit}
	case ReasonGroupLimit:
		e = &Error{Code: EEXHAUSTED, Reason: ReasonGroupLimit}
	case ReasonSeatsReserved:
		e = &Error{Code: EEXHAUSTED, Reason: ReasonSeatsReserved}
	default:
		return &Error{Code: EINTERNAL, Message: "verdict with unknown reason " + strconv.Quote(v.Reason)}
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("no seat of %s free for this client: %s", pool, v.Detail)
	}
	e.Metadata = map[string]string{"in_use": strconv.Itoa(v.InUse), "limit": strconv.Itoa(v.Limit)}
	if feature != "" {
		e.Metadata["feature"] = feature
	}
	if v.Rule >= 0 {
		e.Metadata["rule"] = strconv.Itoa(v.Rule)
		e.Metadata["subject_kind"] = string(v.Subject.Kind)
		e.Metadata["subject_name"] = v.Subject.Name
	}
	return e
}

// ErrGroupNotFound: the tenant has no group of that name.
var ErrGroupNotFound = Errorf(ENOTFOUND, ReasonGroupNotFound, "group not found")

// GroupKindInUse refuses to change the kind of a group (of kind) that the
// policies of licenses name as one.
func GroupKindInUse(name string, kind SubjectKind, licenseIDs []string) error {
	return Errorf(EPRECONDITION, ReasonGroupInUse, "group %q is a %s, and the policy of license %s names it as one: its kind cannot change while a policy names it (change those policies first, or put a group of another name)",
		name, kind, strings.Join(licenseIDs, ", "))
}

// GroupInUse refuses to delete a group that the policies of licenses name.
func GroupInUse(name string, licenseIDs []string) error {
	return Errorf(EPRECONDITION, ReasonGroupInUse, "group %q is named by the policy of license %s: change those policies first",
		name, strings.Join(licenseIDs, ", "))
}

// GroupNames lists the names of the groups the policy's rules and
// priorities name, sorted (none for a nil policy).
func (p *Policy) GroupNames() []string {
	if p == nil {
		return nil
	}
	var names []string
	add := func(s Subject) {
		if s.Kind.IsGroup() && !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	for _, r := range p.Rules {
		add(r.Subject)
	}
	for _, pr := range p.Priorities {
		add(pr.Subject)
	}
	slices.Sort(names)
	return names
}
