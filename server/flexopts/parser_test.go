package flexopts

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// siteLicense is the license testdata/site.opt is for: the base pool is
// FlexNet's cadsuite, render's grants are all of version 2024.2, sim's of
// 3 and 4.
func siteLicense() *server.License {
	return &server.License{ID: "lic_acme", TenantID: "tnt_acme", Seats: 10, Grants: []server.Grant{
		{ID: "lic_acme.00000001", Feature: "render", Version: "2024.2", Seats: 6},
		{ID: "lic_acme.00000002", Feature: "render", Version: "2024.2", Seats: 4},
		{ID: "lic_acme.00000003", Feature: "sim", Version: "3", Seats: 4},
		{ID: "lic_acme.00000004", Feature: "sim", Version: "4", Seats: 4},
		{ID: "lic_acme.00000005", Feature: "viewer", Seats: 20},
	}}
}

func user(n string) server.Subject  { return server.Subject{Kind: server.SubjectUser, Name: n} }
func host(n string) server.Subject  { return server.Subject{Kind: server.SubjectHost, Name: n} }
func group(n string) server.Subject { return server.Subject{Kind: server.SubjectGroup, Name: n} }
func hostGroup(n string) server.Subject {
	return server.Subject{Kind: server.SubjectHostGroup, Name: n}
}

func TestParseSiteFile(t *testing.T) {
	f, err := os.Open("testdata/site.opt")
	require.NoError(t, err)
	defer f.Close()
	l := siteLicense()
	res, err := Parse(f, l, Options{BaseFeature: "cadsuite"})
	require.NoError(t, err)

	require.Equal(t, []server.Group{
		{TenantID: "tnt_acme", Name: "night", Kind: server.SubjectGroup, Members: []string{"alice", "bob", "carol", "dave"}},
		{TenantID: "tnt_acme", Name: "day", Kind: server.SubjectGroup, Members: []string{"erin", "frank"}},
		{TenantID: "tnt_acme", Name: "farm", Kind: server.SubjectHostGroup, Members: []string{"node01", "node02", "Node03.acme.example"}},
	}, res.Groups)
	require.Equal(t, server.Policy{
		Rules: []server.PolicyRule{
			{Kind: server.RuleReserve, Feature: "render", Count: 2, Subject: group("night")},
			{Kind: server.RuleReserve, Feature: "render", Count: 2, Subject: user("erin")}, // two RESERVE 1 lines
			{Kind: server.RuleReserve, Count: 1, Subject: host("node01")},                  // cadsuite: the base pool
			{Kind: server.RuleMax, Feature: "render", Count: 3, Subject: group("night")},   // the group as a whole
			{Kind: server.RuleMax, Feature: "render", Count: 2, Subject: user("frank")},    // VERSION=2024.2 is every render grant
			{Kind: server.RuleMax, Feature: "viewer", Count: 5, Subject: group("night")},   // GROUP ALL_GROUPS
			{Kind: server.RuleMax, Feature: "viewer", Count: 5, Subject: group("day")},
			{Kind: server.RuleInclude, Feature: "sim", Subject: group("day")},
			{Kind: server.RuleInclude, Feature: "sim", Subject: hostGroup("farm")},
			{Kind: server.RuleExclude, Feature: "sim", Subject: user("frank")},
			{Kind: server.RuleExclude, Subject: host("kiosk7")}, // EXCLUDEALL: the base pool and every feature
			{Kind: server.RuleExclude, Feature: "render", Subject: host("kiosk7")},
			{Kind: server.RuleExclude, Feature: "sim", Subject: host("kiosk7")},
			{Kind: server.RuleExclude, Feature: "viewer", Subject: host("kiosk7")},
		},
		Linger: []server.Linger{{Feature: "render", Duration: 300 * time.Second}},
	}, res.Policy)

	type note struct {
		line   int
		reason string
	}
	var got []note
	for _, n := range res.Notes {
		got = append(got, note{n.Line, n.Reason})
	}
	require.Equal(t, []note{
		{4, "GROUPCASEINSENSITIVE is not mapped: seatd compares user names exactly and host names without case, whatever this says"},
		{10, `members left out: "10.1.2.*": wildcards are not mapped: seatd compares the host name a client claims as a whole`},
		{14, "added to the reservation of feature render for user erin above: 2 seats now"},
		{18, "sim:VERSION=4.0 is not mapped: a seatd rule applies to all of feature sim"},
		{19, "MAX for every user apart (USER ALL_USERS) is not mapped: a seatd max rule names one user, host or group (a max on a group with each_member caps each of its members)"},
		{22, "sim:VERSION=3 is not mapped: a seatd rule applies to all of feature sim"},
		{26, "type DISPLAY is not mapped: seatd knows no client's display, only its user and host name"},
		{27, "type PROJECT is not mapped: seatd knows no client's LM_PROJECT, only its user and host name"},
		{28, `the license has no grant of feature "cad", and it is not the base feature "cadsuite"`},
		{29, `HOST_GROUP "labs" is left out: none of its members could be mapped`},
		{31, `seconds "100000": must be a whole number from 0 to 86400`},
		{32, "TIMEOUTALL is not mapped: seatd reclaims a seat when its lease misses its heartbeats (the license's lease_ttl), not after an idle time"},
		{33, "NOLOG is not mapped: seatd's logs and usage events are not configured per license"},
		{34, "MAX_OVERDRAFT is not mapped: overdraft is set on the license or the grant (overdraft), not in the policy"},
		{35, "REPORTLOG is not mapped: seatd's logs and usage events are not configured per license"},
	}, got)
	require.Equal(t, "INCLUDE \"sim VERSION=3\" USER alice", res.Notes[5].Text)

	// What it makes is a policy the server takes.
	groups := map[string]server.Group{}
	for i, g := range res.Groups {
		require.NoError(t, g.Validate(fmt.Sprintf("groups[%d]", i)))
		groups[g.Name] = g
	}
	require.NoError(t, res.Policy.Validate(l, groups))
}

// parse reads src for a license with features render and sim (both
// grants of version 2), returning what it made.
func parse(t *testing.T, src string, opts Options) Result {
	t.Helper()
	l := &server.License{TenantID: "tnt", Seats: 5, Grants: []server.Grant{
		{Feature: "render", Version: "2", Seats: 5},
		{Feature: "sim", Version: "2", Seats: 3},
	}}
	res, err := Parse(strings.NewReader(src), l, opts)
	require.NoError(t, err)
	return res
}

func TestParseLines(t *testing.T) {
	for _, c := range []struct {
		name   string
		src    string
		opts   Options
		rules  []server.PolicyRule
		groups []server.Group
		notes  []Note
	}{
		{name: "comments, blank lines, CRLF, a continuation",
			src: "# a comment \\\r\nINCLUDE render USER a\r\n\r\n   # indented comment\nINCLUDE \\\n  sim \\\n  USER b\n",
			rules: []server.PolicyRule{
				{Kind: server.RuleInclude, Feature: "render", Subject: user("a")},
				{Kind: server.RuleInclude, Feature: "sim", Subject: user("b")},
			}},
		{name: "a file ending in a continuation", src: "EXCLUDE render USER a \\",
			rules: []server.PolicyRule{{Kind: server.RuleExclude, Feature: "render", Subject: user("a")}}},
		{name: "keywords and types in any case; names as written",
			src:   "max 2 render user Alice\nExclude sim Host NODE1\n",
			rules: []server.PolicyRule{{Kind: server.RuleMax, Feature: "render", Count: 2, Subject: user("Alice")}, {Kind: server.RuleExclude, Feature: "sim", Subject: host("NODE1")}}},
		{name: "repeated GROUP lines add up; a group may be named before it is defined",
			src: "RESERVE 2 render GROUP g\nGROUP g a b\nGROUP g b c\nUSER_GROUP g d\nHOST_GROUP h N1 n1 n2\nMAX 1 sim HOST_GROUP h\n",
			rules: []server.PolicyRule{
				{Kind: server.RuleReserve, Feature: "render", Count: 2, Subject: group("g")},
				{Kind: server.RuleMax, Feature: "sim", Count: 1, Subject: hostGroup("h")},
			},
			groups: []server.Group{
				{TenantID: "tnt", Name: "g", Kind: server.SubjectGroup, Members: []string{"a", "b", "c", "d"}},
				{TenantID: "tnt", Name: "h", Kind: server.SubjectHostGroup, Members: []string{"N1", "n2"}},
			}},
		{name: "one name for a GROUP and a HOST_GROUP",
			src:    "GROUP g a\nHOST_GROUP g n1\n",
			groups: []server.Group{{TenantID: "tnt", Name: "g", Kind: server.SubjectGroup, Members: []string{"a"}}},
			notes:  []Note{{2, "HOST_GROUP g n1", `"g" is already a GROUP: a tenant's group names are unique whatever their kind`}}},
		{name: "groups: undefined, of the other kind, without members",
			src:    "GROUP g a\nGROUP\nINCLUDE render GROUP nope\nINCLUDE render HOST_GROUP g\n",
			groups: []server.Group{{TenantID: "tnt", Name: "g", Kind: server.SubjectGroup, Members: []string{"a"}}},
			notes: []Note{
				{2, "GROUP", "GROUP needs a name and at least one member"},
				{3, "INCLUDE render GROUP nope", `GROUP "nope" is not defined in this file`},
				{4, "INCLUDE render HOST_GROUP g", `"g" is a GROUP, not a HOST_GROUP`},
			}},
		{name: "hosts seatd cannot match",
			src: "EXCLUDE render HOST 10.0.0.7\nEXCLUDE render HOST lab-*\nEXCLUDE render INTERNET 10.0.0.*\n",
			notes: []Note{
				{1, "EXCLUDE render HOST 10.0.0.7", `HOST "10.0.0.7": an IP address is not mapped: seatd compares the host name a client claims, not its address`},
				{2, "EXCLUDE render HOST lab-*", `HOST "lab-*": wildcards are not mapped: seatd compares the host name a client claims as a whole`},
				{3, "EXCLUDE render INTERNET 10.0.0.*", "type INTERNET is not mapped: seatd matches the host name a client claims, not its IP address"},
			}},
		{name: "feature qualifiers: VERSION of every grant maps, others do not",
			src: "MAX 1 render:VERSION=2.0 USER a\nMAX 1 \"sim VERSION=2\" USER a\nMAX 1 sim:VERSION=3 USER b\nMAX 1 render:HOSTID=abc USER c\nMAX 1 \" \" USER d\n",
			rules: []server.PolicyRule{
				{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: user("a")},
				{Kind: server.RuleMax, Feature: "sim", Count: 1, Subject: user("a")},
			},
			notes: []Note{
				{3, "MAX 1 sim:VERSION=3 USER b", "sim:VERSION=3 is not mapped: a seatd rule applies to all of feature sim"},
				{4, "MAX 1 render:HOSTID=abc USER c", "render:HOSTID=abc is not mapped: a seatd rule applies to all of feature render"},
				{5, `MAX 1 " " USER d`, "an empty feature name"},
			}},
		{name: "a feature the license lacks, with and without a base feature",
			src:   "INCLUDE cad USER a\n",
			notes: []Note{{1, "INCLUDE cad USER a", `the license has no grant of feature "cad" (if it is the license's base pool, say so with --base-feature cad)`}}},
		{name: "the base feature is the base pool", src: "INCLUDE cad USER a\nRESERVE 1 cad:VERSION=1 USER a\n", opts: Options{BaseFeature: "cad"},
			rules: []server.PolicyRule{{Kind: server.RuleInclude, Subject: user("a")}},
			notes: []Note{{2, "RESERVE 1 cad:VERSION=1 USER a", "cad:VERSION=1 is not mapped: a seatd rule applies to all of the base pool"}}},
		{name: "INCLUDEALL without a base feature: every grant feature",
			src: "INCLUDEALL GROUP g\nGROUP g a\nINCLUDE sim GROUP g\nEXCLUDEALL USER z\nEXCLUDEALL USER z\n",
			rules: []server.PolicyRule{
				{Kind: server.RuleInclude, Feature: "render", Subject: group("g")},
				{Kind: server.RuleInclude, Feature: "sim", Subject: group("g")},
				{Kind: server.RuleExclude, Feature: "render", Subject: user("z")},
				{Kind: server.RuleExclude, Feature: "sim", Subject: user("z")},
			},
			groups: []server.Group{{TenantID: "tnt", Name: "g", Kind: server.SubjectGroup, Members: []string{"a"}}},
			notes: []Note{
				{1, "INCLUDEALL GROUP g", "applies to the license's features only: the base pool (its 5 seats) is left out, as no --base-feature names the FlexNet feature that stands for it"},
				{3, "INCLUDE sim GROUP g", "left out: a include rule of feature sim for group g is above, and the first applies"},
				{4, "EXCLUDEALL USER z", "applies to the license's features only: the base pool (its 5 seats) is left out, as no --base-feature names the FlexNet feature that stands for it"},
				{5, "EXCLUDEALL USER z", "left out: every feature has this exclude rule above already"},
			}},
		{name: "repeats: MAX and LINGER keep the first",
			src:   "MAX 2 render HOST N1\nMAX 3 render HOST n1\nLINGER sim 60\nLINGER sim 90\n",
			rules: []server.PolicyRule{{Kind: server.RuleMax, Feature: "render", Count: 2, Subject: host("N1")}},
			notes: []Note{
				{2, "MAX 3 render HOST n1", "left out: a max rule of feature render for host n1 is above, and the first applies"},
				{4, "LINGER sim 90", "left out: line 3 sets the linger of feature sim, and the first applies"},
			}},
		{name: "bad counts, words and keywords",
			src: "MAX 0 render USER a\nRESERVE x render USER a\nRESERVE 1 render USER\nINCLUDE render USER a b\nINCLUDEALL USER\nLINGER render\nLINGER render -1\nEXCLUDE render USER \"a\nFROB x\nEXCLUDE render WHO a\nEXCLUDE render USER a\x01b\n",
			notes: []Note{
				{1, "MAX 0 render USER a", `count "0": must be a whole number from 1 to 1000000`},
				{2, "RESERVE x render USER a", `count "x": must be a whole number from 1 to 1000000`},
				{3, "RESERVE 1 render USER", "RESERVE takes a count, a feature, a type and a name"},
				{4, "INCLUDE render USER a b", "INCLUDE takes a feature, a type and a name"},
				{5, "INCLUDEALL USER", "INCLUDEALL takes a type and a name"},
				{6, "LINGER render", "LINGER takes a feature and seconds"},
				{7, "LINGER render -1", `seconds "-1": must be a whole number from 0 to 86400`},
				{8, `EXCLUDE render USER "a`, "an empty quoted word, or an unterminated quote"},
				{9, "FROB x", `"FROB" is not an options-file keyword seatd knows`},
				{10, "EXCLUDE render WHO a", `type "WHO" is not one of USER, HOST, GROUP, HOST_GROUP (DISPLAY, INTERNET, PROJECT)`},
				{11, "EXCLUDE render USER a\x01b", `name "a\x01b" must be printable characters, no control characters (got "a\x01b")`},
			}},
		{name: "MAX GROUP ALL_GROUPS with no group", src: "MAX 1 render GROUP ALL_GROUPS\n",
			notes: []Note{{1, "MAX 1 render GROUP ALL_GROUPS", "GROUP ALL_GROUPS: the file defines no GROUP"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := parse(t, c.src, c.opts)
			require.Equal(t, c.rules, res.Policy.Rules)
			require.Equal(t, c.groups, res.Groups)
			require.Equal(t, c.notes, res.Notes)
		})
	}
}

func TestParseINCLUDEALLNoFeature(t *testing.T) {
	res, err := Parse(strings.NewReader("INCLUDEALL USER a\n"), &server.License{Seats: 3}, Options{})
	require.NoError(t, err)
	require.Empty(t, res.Policy.Rules)
	require.Equal(t, []Note{{1, "INCLUDEALL USER a", "the license has no grant of any feature, and no --base-feature names its base pool"}}, res.Notes)
	res, err = Parse(strings.NewReader("INCLUDEALL USER a\n"), &server.License{Seats: 3}, Options{BaseFeature: "cad"})
	require.NoError(t, err)
	require.Equal(t, []server.PolicyRule{{Kind: server.RuleInclude, Subject: user("a")}}, res.Policy.Rules)
}

// TestParseEXCLUDEALLWithoutBaseFeatureNotesTheBasePool: FlexNet's
// EXCLUDEALL takes in every feature the vendor daemon serves, the
// product's own seats too; without --base-feature the rules reach only the
// license's features, and a note says the base pool is left out (open to
// the excluded), where it used to be left out unsaid. With
// --base-feature, or a license without base seats, there is nothing to say.
func TestParseEXCLUDEALLWithoutBaseFeatureNotesTheBasePool(t *testing.T) {
	l := &server.License{ID: "lic_a", TenantID: "t", Seats: 10, Grants: []server.Grant{{ID: "lic_a.00000001", Feature: "render", Seats: 2}}}
	res, err := Parse(strings.NewReader("EXCLUDEALL USER intern\n"), l, Options{})
	require.NoError(t, err)
	require.Equal(t, []server.PolicyRule{{Kind: server.RuleExclude, Feature: "render", Subject: user("intern")}}, res.Policy.Rules)
	require.Equal(t, []Note{{1, "EXCLUDEALL USER intern",
		"applies to the license's features only: the base pool (its 10 seats) is left out, as no --base-feature names the FlexNet feature that stands for it"}}, res.Notes)

	res, err = Parse(strings.NewReader("EXCLUDEALL USER intern\n"), l, Options{BaseFeature: "cad"})
	require.NoError(t, err)
	require.Len(t, res.Policy.Rules, 2, "the base pool and render")
	require.Empty(t, res.Notes)

	l.Seats = 0
	res, err = Parse(strings.NewReader("EXCLUDEALL USER intern\n"), l, Options{})
	require.NoError(t, err)
	require.Empty(t, res.Notes, "no base seats to leave out")
}

func TestParseFails(t *testing.T) {
	_, err := Parse(iotest.ErrReader(errors.New("disk gone")), &server.License{}, Options{})
	require.ErrorContains(t, err, "disk gone")

	long := "GROUP g " + strings.Repeat("a ", MaxLineBytes/2+1) + "\n"
	_, err = Parse(strings.NewReader("# fine\n"+long), &server.License{}, Options{})
	require.ErrorContains(t, err, "line 2: longer than")

	continued := "GROUP g \\\n" + strings.Repeat(strings.Repeat("a", 1000)+" \\\n", MaxLineBytes/1000+1)
	_, err = Parse(strings.NewReader(continued), &server.License{}, Options{})
	require.ErrorContains(t, err, "line 1: longer than")
}
