// Package flexopts reads a FlexNet options file (a vendor daemon's .opt
// file) into a seatd site policy for one license: RESERVE, MAX, INCLUDE,
// EXCLUDE, INCLUDEALL, EXCLUDEALL and LINGER become the policy's rules
// and lingers, GROUP and HOST_GROUP the tenant groups they name. Every
// line it cannot map, or maps otherwise than written, comes back as a Note
// saying why: nothing is dropped unsaid.
//
// The syntax is Revenera's "Options File Syntax" (FlexNet Publisher
// License Administration Guide). Where it leaves a point open:
//   - Keywords and types (RESERVE, USER, ...) are read in any case: the
//     guide writes them in upper case without saying whether case
//     matters, and no two differ only in case. Names (features, users,
//     hosts, groups) are kept as written.
//   - A comment is a line whose first non-blank character is '#'. A line
//     ending in '\' continues on the next (a comment does not continue).
//   - FlexNet compares host names with case; seatd compares them without
//     (DNS names), and users exactly as FlexNet does.
package flexopts

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
)

// MaxLineBytes bounds one line of the file, continuations joined. FlexNet
// allows 4,000 characters a line; a group listed with continuations may
// hold many more.
const MaxLineBytes = 1 << 20

// Options tune how a file maps onto the license.
type Options struct {
	// BaseFeature is the FlexNet feature name that stands for the
	// license's base pool (License.Seats); "" when none does (seatctl
	// --base-feature). Any other feature name must be a feature the
	// license holds a grant of.
	BaseFeature string
}

// Result is what Parse makes of a file: the policy, the groups its rules
// name (in the order the file defines them), and a note for every line
// not mapped as written. Neither the policy nor the groups are validated:
// the caller validates them (server.Policy.Validate, server.Group.Validate)
// against the tenant's other groups before storing anything.
type Result struct {
	Policy server.Policy
	Groups []server.Group
	Notes  []Note
}

// Note is one line of the file not mapped, or not mapped as written.
type Note struct {
	Line   int    // its first line, from 1
	Text   string // the line as read, continuations joined
	Reason string // why
}

// notedKeywords are FlexNet keywords seatd has no counterpart for, and why.
var notedKeywords = map[string]string{
	"TIMEOUT":                "seatd reclaims a seat when its lease misses its heartbeats (the license's lease_ttl), not after an idle time",
	"TIMEOUTALL":             "seatd reclaims a seat when its lease misses its heartbeats (the license's lease_ttl), not after an idle time",
	"MAX_OVERDRAFT":          "overdraft is set on the license or the grant (overdraft), not in the policy",
	"NOLOG":                  "seatd's logs and usage events are not configured per license",
	"REPORTLOG":              "seatd's logs and usage events are not configured per license",
	"DEBUGLOG":               "seatd's logs and usage events are not configured per license",
	"BORROW_LOWWATER":        "borrowing is set on the license or the grant (max_borrow_duration, max_borrowed_seats)",
	"MAX_BORROW_HOURS":       "borrowing is set on the license or the grant (max_borrow_duration, max_borrowed_seats)",
	"INCLUDE_BORROW":         "borrowing is set on the license or the grant (max_borrow_duration, max_borrowed_seats), not per user",
	"EXCLUDE_BORROW":         "borrowing is set on the license or the grant (max_borrow_duration, max_borrowed_seats), not per user",
	"GROUPCASEINSENSITIVE":   "seatd compares user names exactly and host names without case, whatever this says",
	"FQDN_MATCHING":          "seatd matches the host name a client claims as a whole, without case",
	"INCLUDE_ENTITLEMENT":    "trusted-storage activation has no counterpart in seatd",
	"EXCLUDE_ENTITLEMENT":    "trusted-storage activation has no counterpart in seatd",
	"INCLUDEALL_ENTITLEMENT": "trusted-storage activation has no counterpart in seatd",
	"EXCLUDEALL_ENTITLEMENT": "trusted-storage activation has no counterpart in seatd",
	"ACTIVATION_LOWWATER":    "trusted-storage activation has no counterpart in seatd",
	"ACTIVATION_EXPIRY_DAYS": "trusted-storage activation has no counterpart in seatd",
	"AUTOMATIC_REREAD":       "a vendor-daemon setting with no counterpart in seatd",
	"DAEMON_SELECT_TIMEOUT":  "a vendor-daemon setting with no counterpart in seatd",
	"MAX_CONNECTIONS":        "a vendor-daemon setting with no counterpart in seatd",
	"AUTO_ROLLOVER":          "a vendor-daemon setting with no counterpart in seatd",
}

// line is one logical line: continuations joined, split into words.
type line struct {
	num   int
	text  string
	words []word
}

// word is one word of a line; quoted is a "feature keyword=value" spec.
type word struct {
	s      string
	quoted bool
}

// parser holds what one Parse has gathered so far.
type parser struct {
	l        *server.License
	opts     Options
	features []string // the license's grant features, sorted, without repeats
	res      Result
	groups   map[string]int                // name -> index in res.Groups
	empty    map[string]server.SubjectKind // groups left out: no member mapped
	rules    map[ruleKey]int
	lingers  map[string]int // feature -> line
}

// ruleKey tells two rules apart as server.Policy.Validate does.
type ruleKey struct {
	kind    server.RuleKind
	feature string
	subject server.Subject
}

// Parse reads an options file for license l. It fails only when r does
// (or a line is longer than MaxLineBytes); whatever it cannot map is in
// Result.Notes.
func Parse(r io.Reader, l *server.License, opts Options) (Result, error) {
	lines, err := readLines(r)
	if err != nil {
		return Result{}, err
	}
	p := &parser{l: l, opts: opts, groups: map[string]int{}, empty: map[string]server.SubjectKind{}, rules: map[ruleKey]int{}, lingers: map[string]int{}}
	for _, g := range l.Grants {
		p.features = append(p.features, g.Feature)
	}
	slices.Sort(p.features)
	p.features = slices.Compact(p.features)

	// Groups first: a rule may name a group defined further down.
	var rest []line
	for _, ln := range lines {
		if len(ln.words) == 0 {
			p.note(ln, "an empty quoted word, or an unterminated quote")
			continue
		}
		switch strings.ToUpper(ln.words[0].s) {
		case "GROUP", "USER_GROUP":
			p.group(ln, server.SubjectGroup)
		case "HOST_GROUP":
			p.group(ln, server.SubjectHostGroup)
		default:
			rest = append(rest, ln)
		}
	}
	p.dropEmptyGroups()
	for _, ln := range rest {
		p.option(ln)
	}
	slices.SortStableFunc(p.res.Notes, func(a, b Note) int { return a.Line - b.Line })
	return p.res, nil
}

// readLines splits r into logical lines: comments and blank lines out,
// continuations joined, words split.
func readLines(r io.Reader) ([]line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes)
	var (
		out  []line
		cur  strings.Builder
		from int // first line of cur; 0: none open
		num  int
	)
	flush := func() {
		if from > 0 {
			text := strings.TrimSpace(cur.String())
			out = append(out, line{num: from, text: text, words: splitWords(text)})
		}
		cur.Reset()
		from = 0
	}
	for sc.Scan() {
		num++
		s := strings.TrimRight(sc.Text(), " \t\r")
		if from == 0 {
			t := strings.TrimSpace(s)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			from = num
		}
		more := strings.HasSuffix(s, `\`)
		s = strings.TrimSuffix(s, `\`)
		if cur.Len()+len(s)+1 > MaxLineBytes {
			return nil, fmt.Errorf("options file line %d: longer than %d bytes", from, MaxLineBytes)
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(s)
		if !more {
			flush()
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("options file line %d: longer than %d bytes", num+1, MaxLineBytes)
		}
		return nil, fmt.Errorf("reading the options file: %w", err)
	}
	flush() // a file ending in a continuation
	return out, nil
}

// splitWords splits a line at blanks; a word opening with '"' runs to the
// next '"' (FlexNet's "feature keyword=value"). nil for an unterminated
// quote or an empty quoted word.
func splitWords(s string) []word {
	var out []word
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end <= 0 {
				return nil
			}
			out = append(out, word{s: s[1 : 1+end], quoted: true})
			s = s[2+end:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		out = append(out, word{s: s[:end]})
		s = s[end:]
	}
}

func (p *parser) note(ln line, format string, args ...any) {
	p.res.Notes = append(p.res.Notes, Note{Line: ln.num, Text: ln.text, Reason: fmt.Sprintf(format, args...)})
}

// group reads GROUP name user... or HOST_GROUP name host...; lines of one
// name add to its members, as FlexNet's do.
func (p *parser) group(ln line, kind server.SubjectKind) {
	kw := strings.ToUpper(ln.words[0].s)
	if len(ln.words) < 3 {
		p.note(ln, "%s needs a name and at least one member", kw)
		return
	}
	name := ln.words[1].s
	if err := server.CheckGroupName("name", name); err != nil {
		p.note(ln, "group name %q %s", name, message(err))
		return
	}
	i, ok := p.groups[name]
	if !ok {
		i = len(p.res.Groups)
		p.groups[name] = i
		p.res.Groups = append(p.res.Groups, server.Group{TenantID: p.l.TenantID, Name: name, Kind: kind})
	}
	g := &p.res.Groups[i]
	if g.Kind != kind {
		p.note(ln, "%q is already a %s: a tenant's group names are unique whatever their kind", name, kindWord(g.Kind))
		return
	}
	var skipped []string
	for _, w := range ln.words[2:] {
		m := w.s
		if err := server.CheckPolicyName("member", m); err != nil {
			skipped = append(skipped, fmt.Sprintf("%q %s", m, message(err)))
			continue
		}
		if kind == server.SubjectHostGroup {
			if why := hostProblem(m); why != "" {
				skipped = append(skipped, fmt.Sprintf("%q: %s", m, why))
				continue
			}
		}
		if !slices.ContainsFunc(g.Members, func(x string) bool { return sameMember(kind, x, m) }) {
			g.Members = append(g.Members, m)
		}
	}
	if len(skipped) > 0 {
		p.note(ln, "members left out: %s", strings.Join(skipped, "; "))
	}
}

// dropEmptyGroups leaves out the groups none of whose members could be
// mapped (their lines have notes): a rule naming one is noted in turn
// rather than mapped to a group of nobody, which would reserve seats for
// no one or, included, lock everyone out.
func (p *parser) dropEmptyGroups() {
	kept := p.res.Groups[:0]
	for _, g := range p.res.Groups {
		if len(g.Members) == 0 {
			p.empty[g.Name] = g.Kind
			continue
		}
		kept = append(kept, g)
	}
	p.res.Groups = kept
	clear(p.groups)
	for i, g := range p.res.Groups {
		p.groups[g.Name] = i
	}
}

func sameMember(kind server.SubjectKind, a, b string) bool {
	if kind == server.SubjectHostGroup {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// option maps one line other than a group's.
func (p *parser) option(ln line) {
	kw := strings.ToUpper(ln.words[0].s)
	args := ln.words[1:]
	switch kw {
	case "RESERVE", "MAX":
		if len(args) != 4 {
			p.note(ln, "%s takes a count, a feature, a type and a name", kw)
			return
		}
		count, err := strconv.Atoi(args[0].s)
		if err != nil || count < 1 || count > server.MaxPolicyCount {
			p.note(ln, "count %q: must be a whole number from 1 to %d", args[0].s, server.MaxPolicyCount)
			return
		}
		kind := server.RuleReserve
		if kw == "MAX" {
			// Revenera's MAX page notes that on a group MAX limits the
			// usage of the whole group, not of each user in it: the rule
			// caps the group as a whole (EachMember false).
			kind = server.RuleMax
		}
		p.rule(ln, kind, count, []word{args[1]}, args[2].s, args[3].s)
	case "INCLUDE", "EXCLUDE":
		if len(args) != 3 {
			p.note(ln, "%s takes a feature, a type and a name", kw)
			return
		}
		p.rule(ln, server.RuleKind(strings.ToLower(kw)), 0, []word{args[0]}, args[1].s, args[2].s)
	case "INCLUDEALL", "EXCLUDEALL":
		if len(args) != 2 {
			p.note(ln, "%s takes a type and a name", kw)
			return
		}
		// Every feature of the license (and the base pool when a FlexNet
		// feature stands for it): FlexNet's "all features served by this
		// vendor daemon".
		var all []word
		if p.opts.BaseFeature != "" {
			all = append(all, word{s: p.opts.BaseFeature})
		}
		for _, f := range p.features {
			all = append(all, word{s: f})
		}
		if len(all) == 0 {
			p.note(ln, "the license has no grant of any feature, and no --base-feature names its base pool")
			return
		}
		added := p.rule(ln, server.RuleKind(strings.ToLower(strings.TrimSuffix(kw, "ALL"))), 0, all, args[0].s, args[1].s)
		if added > 0 && p.opts.BaseFeature == "" && p.l.Seats > 0 {
			// FlexNet's "every feature" takes in the product's own seats;
			// here they are no feature unless --base-feature says which:
			// say that the base pool stays open (EXCLUDEALL) or shared
			// with all (INCLUDEALL).
			p.note(ln, "applies to the license's features only: the base pool (its %d seats) is left out, as no --base-feature names the FlexNet feature that stands for it", p.l.Seats)
		}
	case "LINGER":
		p.linger(ln, args)
	default:
		if why, ok := notedKeywords[kw]; ok {
			p.note(ln, "%s is not mapped: %s", kw, why)
			return
		}
		p.note(ln, "%q is not an options-file keyword seatd knows", ln.words[0].s)
	}
}

// rule adds the rule of kind for the subject (typ, name) to each feature
// spec given (several for INCLUDEALL/EXCLUDEALL), and returns how many
// rules it added.
func (p *parser) rule(ln line, kind server.RuleKind, count int, specs []word, typ, name string) int {
	var subjects []server.Subject
	switch {
	case kind == server.RuleMax && strings.EqualFold(typ, "USER") && name == "ALL_USERS":
		p.note(ln, "MAX for every user apart (USER ALL_USERS) is not mapped: a seatd max rule names one user, host or group (a max on a group with each_member caps each of its members)")
		return 0
	case kind == server.RuleMax && strings.EqualFold(typ, "GROUP") && name == "ALL_GROUPS":
		// Revenera: the same as one MAX line for each group the file defines.
		for _, g := range p.res.Groups {
			if g.Kind == server.SubjectGroup {
				subjects = append(subjects, server.Subject{Kind: server.SubjectGroup, Name: g.Name})
			}
		}
		if len(subjects) == 0 {
			p.note(ln, "GROUP ALL_GROUPS: the file defines no GROUP")
			return 0
		}
	default:
		s, why := p.subject(typ, name)
		if why != "" {
			p.note(ln, "%s", why)
			return 0
		}
		subjects = append(subjects, s)
	}
	var skipped []string
	added := 0
	for _, spec := range specs {
		feature, why := p.feature(spec)
		if why != "" {
			skipped = append(skipped, why)
			continue
		}
		for _, s := range subjects {
			if p.add(ln, server.PolicyRule{Kind: kind, Feature: feature, Count: count, Subject: s}, len(specs) > 1) {
				added++
			}
		}
	}
	switch {
	case len(skipped) > 0:
		p.note(ln, "%s", strings.Join(skipped, "; "))
	case added == 0 && len(specs) > 1:
		p.note(ln, "left out: every feature has this %s rule above already", kind)
	}
	return added
}

// add appends r unless the policy has its like already: a second RESERVE
// adds its seats to the first (each RESERVE line reserves its own); a
// second MAX, INCLUDE or EXCLUDE is left out (the first applies). quiet
// leaves out a repeat unsaid, for the INCLUDEALL/EXCLUDEALL expansion of
// a feature that already had the rule. It reports whether r was added.
func (p *parser) add(ln line, r server.PolicyRule, quiet bool) bool {
	k := ruleKey{r.Kind, r.Feature, canonical(r.Subject)}
	i, dup := p.rules[k]
	if !dup {
		p.rules[k] = len(p.res.Policy.Rules)
		p.res.Policy.Rules = append(p.res.Policy.Rules, r)
		return true
	}
	prev := &p.res.Policy.Rules[i]
	switch {
	case r.Kind == server.RuleReserve:
		prev.Count += r.Count
		p.note(ln, "added to the reservation of %s for %s above: %d seats now", poolWord(r.Feature), r.Subject, prev.Count)
	case !quiet:
		p.note(ln, "left out: a %s rule of %s for %s is above, and the first applies", r.Kind, poolWord(r.Feature), r.Subject)
	}
	return false
}

func canonical(s server.Subject) server.Subject {
	if s.Kind == server.SubjectHost {
		s.Name = strings.ToLower(s.Name)
	}
	return s
}

// subject maps a FlexNet type and name, or says why not.
func (p *parser) subject(typ, name string) (server.Subject, string) {
	var kind server.SubjectKind
	switch strings.ToUpper(typ) {
	case "USER":
		kind = server.SubjectUser
	case "HOST":
		kind = server.SubjectHost
	case "GROUP":
		kind = server.SubjectGroup
	case "HOST_GROUP":
		kind = server.SubjectHostGroup
	case "DISPLAY":
		return server.Subject{}, "type DISPLAY is not mapped: seatd knows no client's display, only its user and host name"
	case "INTERNET":
		return server.Subject{}, "type INTERNET is not mapped: seatd matches the host name a client claims, not its IP address"
	case "PROJECT":
		return server.Subject{}, "type PROJECT is not mapped: seatd knows no client's LM_PROJECT, only its user and host name"
	default:
		return server.Subject{}, fmt.Sprintf("type %q is not one of USER, HOST, GROUP, HOST_GROUP (DISPLAY, INTERNET, PROJECT)", typ)
	}
	checkName := server.CheckPolicyName
	if kind.IsGroup() {
		checkName = server.CheckGroupName
	}
	if err := checkName("name", name); err != nil {
		return server.Subject{}, fmt.Sprintf("name %q %s", name, message(err))
	}
	switch kind {
	case server.SubjectHost:
		if why := hostProblem(name); why != "" {
			return server.Subject{}, fmt.Sprintf("HOST %q: %s", name, why)
		}
	case server.SubjectGroup, server.SubjectHostGroup:
		i, ok := p.groups[name]
		if _, empty := p.empty[name]; empty {
			return server.Subject{}, fmt.Sprintf("%s %q is left out: none of its members could be mapped", kindWord(p.empty[name]), name)
		}
		if !ok {
			return server.Subject{}, fmt.Sprintf("%s %q is not defined in this file", strings.ToUpper(typ), name)
		}
		if g := p.res.Groups[i]; g.Kind != kind {
			return server.Subject{}, fmt.Sprintf("%q is a %s, not a %s", name, kindWord(g.Kind), kindWord(kind))
		}
	}
	return server.Subject{Kind: kind, Name: name}, ""
}

// hostProblem says why a FlexNet HOST name cannot be a seatd host: FlexNet
// takes IP addresses, with wildcards, where seatd has the name a client
// claims.
func hostProblem(name string) string {
	switch {
	case strings.ContainsAny(name, "*?"):
		return "wildcards are not mapped: seatd compares the host name a client claims as a whole"
	case net.ParseIP(name) != nil:
		return "an IP address is not mapped: seatd compares the host name a client claims, not its address"
	}
	return ""
}

// feature maps a FlexNet feature spec (feature, feature:KEY=value or
// "feature KEY=value") to a feature of the license ("" its base pool), or
// says why not.
func (p *parser) feature(spec word) (string, string) {
	var name string
	var quals []string
	if spec.quoted {
		f := strings.Fields(spec.s)
		if len(f) == 0 {
			return "", "an empty feature name"
		}
		name, quals = f[0], f[1:]
	} else {
		var q string
		var ok bool
		name, q, ok = strings.Cut(spec.s, ":")
		if ok {
			quals = strings.Split(q, ":")
		}
	}
	var feature string
	switch {
	case p.opts.BaseFeature != "" && name == p.opts.BaseFeature:
		feature = ""
	case slices.Contains(p.features, name):
		feature = name
	case p.opts.BaseFeature == "":
		return "", fmt.Sprintf("the license has no grant of feature %q (if it is the license's base pool, say so with --base-feature %s)", name, name)
	default:
		return "", fmt.Sprintf("the license has no grant of feature %q, and it is not the base feature %q", name, p.opts.BaseFeature)
	}
	for _, q := range quals {
		if !p.coversAll(feature, q) {
			return "", fmt.Sprintf("%s:%s is not mapped: a seatd rule applies to all of %s", name, q, poolWord(feature))
		}
	}
	return feature, ""
}

// coversAll reports whether a qualifier selects every grant of the
// feature anyway: VERSION=v when each of them is of version v. Then the
// rule of the whole feature is the rule asked for.
func (p *parser) coversAll(feature, qual string) bool {
	kw, v, ok := strings.Cut(qual, "=")
	if !ok || !strings.EqualFold(kw, "VERSION") || feature == "" || server.CheckVersion("version", v) != nil {
		return false
	}
	for _, g := range p.l.Grants {
		if g.Feature == feature && (g.Version == "" || server.CompareVersions(g.Version, v) != 0) {
			return false
		}
	}
	return true
}

// linger maps LINGER feature seconds.
func (p *parser) linger(ln line, args []word) {
	if len(args) != 2 {
		p.note(ln, "LINGER takes a feature and seconds")
		return
	}
	feature, why := p.feature(args[0])
	if why != "" {
		p.note(ln, "%s", why)
		return
	}
	maxSecs := int(server.MaxPolicyLinger / time.Second)
	secs, err := strconv.Atoi(args[1].s)
	if err != nil || secs < 0 || secs > maxSecs {
		p.note(ln, "seconds %q: must be a whole number from 0 to %d", args[1].s, maxSecs)
		return
	}
	if at, dup := p.lingers[feature]; dup {
		p.note(ln, "left out: line %d sets the linger of %s, and the first applies", at, poolWord(feature))
		return
	}
	p.lingers[feature] = ln.num
	p.res.Policy.Linger = append(p.res.Policy.Linger, server.Linger{Feature: feature, Duration: time.Duration(secs) * time.Second})
}

func poolWord(feature string) string {
	if feature == "" {
		return "the base pool"
	}
	return "feature " + feature
}

func kindWord(k server.SubjectKind) string {
	if k == server.SubjectHostGroup {
		return "HOST_GROUP"
	}
	return "GROUP"
}

// message is a validation error's message, without its field.
func message(err error) string {
	var e *server.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
