package seatctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// policyAdmin is fakeAdmin with a license's policy and the tenant's
// groups; calls lists the calls that write, in order.
type policyAdmin struct {
	fakeAdmin
	policy    *seatdv1.LicensePolicy
	policies  map[string]*seatdv1.LicensePolicy // by license, when set: policy is then none's
	policyErr error                             // GetLicensePolicy's answer, when set
	groups    []*seatdv1.IdentityGroup
	calls     []string
}

func (f *policyAdmin) GetLicensePolicy(_ context.Context, req *seatdv1.GetLicensePolicyRequest, _ ...grpc.CallOption) (*seatdv1.GetLicensePolicyResponse, error) {
	if f.policyErr != nil {
		return nil, f.policyErr
	}
	p := f.policy
	if f.policies != nil {
		p = f.policies[req.GetLicenseId()]
	}
	if p == nil {
		p = &seatdv1.LicensePolicy{LicenseId: req.GetLicenseId()}
	}
	return &seatdv1.GetLicensePolicyResponse{Policy: p}, f.keep("GetLicensePolicy", req)
}

func (f *policyAdmin) SetLicensePolicy(_ context.Context, req *seatdv1.SetLicensePolicyRequest, _ ...grpc.CallOption) (*seatdv1.SetLicensePolicyResponse, error) {
	f.calls = append(f.calls, "SetLicensePolicy")
	p := proto.Clone(req.GetPolicy()).(*seatdv1.LicensePolicy)
	p.LicenseId, p.UpdateTime = req.GetLicenseId(), timestamppb.Now()
	return &seatdv1.SetLicensePolicyResponse{Policy: p}, f.keep("SetLicensePolicy", req)
}

func (f *policyAdmin) ListGroups(_ context.Context, req *seatdv1.ListGroupsRequest, _ ...grpc.CallOption) (*seatdv1.ListGroupsResponse, error) {
	return &seatdv1.ListGroupsResponse{Groups: f.groups}, f.keep("ListGroups", req)
}

func (f *policyAdmin) PutGroup(_ context.Context, req *seatdv1.PutGroupRequest, _ ...grpc.CallOption) (*seatdv1.PutGroupResponse, error) {
	f.calls = append(f.calls, "PutGroup "+req.GetGroup().GetName())
	gr := proto.Clone(req.GetGroup()).(*seatdv1.IdentityGroup)
	gr.CreateTime, gr.UpdateTime = timestamppb.Now(), timestamppb.Now()
	return &seatdv1.PutGroupResponse{Group: gr}, f.keep("PutGroup", req)
}

func (f *policyAdmin) DeleteGroup(_ context.Context, req *seatdv1.DeleteGroupRequest, _ ...grpc.CallOption) (*seatdv1.DeleteGroupResponse, error) {
	f.calls = append(f.calls, "DeleteGroup "+req.GetName())
	return &seatdv1.DeleteGroupResponse{}, f.keep("DeleteGroup", req)
}

func runPolicy(t *testing.T, f *policyAdmin, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdout: &out, adminClient: f}
	code := run(g, append([]string{"--key", "test-key"}, args...), &out, &errb)
	return result{out: out.String(), err: errb.String(), code: code}
}

func runPolicyOK(t *testing.T, f *policyAdmin, args ...string) string {
	t.Helper()
	r := runPolicy(t, f, args...)
	require.Equal(t, ExitOK, r.code, "seatctl %v: %s", args, r.err)
	return r.out
}

// writeFile writes content to a file of the test and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// nightPolicy is the README's: one base seat kept for group night, bob
// capped at one, intern excluded.
func nightPolicy() *seatdv1.LicensePolicy {
	return &seatdv1.LicensePolicy{LicenseId: "lic_cad", UpdateTime: timestamppb.New(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)), Rules: []*seatdv1.PolicyRule{
		{Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 1, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: "night"}},
		{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_USER, Name: "bob"}},
		{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_USER, Name: "intern"}},
		{Kind: seatdv1.PolicyRule_KIND_MAX, Feature: "render", Count: 2, EachMember: true, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: "farm"}},
	}}
}

func TestPolicyGetShowsEachRule(t *testing.T) {
	f := &policyAdmin{policy: nightPolicy()}
	out := runPolicyOK(t, f, "policy", "get", "lic_cad", "--tenant", "acme")
	req := f.requests["GetLicensePolicy"].(*seatdv1.GetLicensePolicyRequest)
	require.Equal(t, "lic_cad", req.GetLicenseId())
	require.Equal(t, "acme", req.GetTenantId())
	require.Regexp(t, `^site policy of license lic_cad, set \S+ \S+: 4 rule\(s\)\n`, out)
	require.Regexp(t, `#\s+RULE\s+POOL\s+COUNT\s+SUBJECT\s+MEANS\n`, out)
	require.Regexp(t, `0\s+reserve\s+base\s+1\s+group night\s+1 seat\(s\) kept for group night\n`, out)
	require.Regexp(t, `1\s+max\s+base\s+1\s+user bob\s+user bob holds at most 1\n`, out)
	require.Regexp(t, `2\s+exclude\s+base\s+-\s+user intern\s+user intern is refused\n`, out)
	require.Regexp(t, `3\s+max\s+feature render\s+2\s+host group farm \(each member\)\s+each member of host group farm holds at most 2\n`, out)

	// -o json is the LicensePolicy, which policy set takes back.
	var got seatdv1.LicensePolicy
	require.NoError(t, protojson.Unmarshal([]byte(runPolicyOK(t, f, "policy", "get", "lic_cad", "-o", "json")), &got))
	require.True(t, proto.Equal(nightPolicy(), &got), "%v", &got)

	require.Equal(t, "license lic_cad has no site policy: any client may take any free seat\n",
		runPolicyOK(t, &policyAdmin{}, "policy", "get", "lic_cad"))

	// Lingers, a line each; a policy of lingers alone is a policy.
	lingers := &seatdv1.LicensePolicy{LicenseId: "lic_cad", UpdateTime: timestamppb.Now(), Linger: []*seatdv1.PolicyLinger{
		{Duration: durationpb.New(5 * time.Minute)}, {Feature: "render", Duration: durationpb.New(0)},
	}}
	out = runPolicyOK(t, &policyAdmin{policy: lingers}, "policy", "get", "lic_cad")
	require.Regexp(t, `^site policy of license lic_cad, set \S+ \S+: 0 rule\(s\), 2 linger\(s\)\n`, out)
	require.NotContains(t, out, "RULE")
	require.Contains(t, out, "linger, base pool: a released seat stays counted 5m for its client to take back\n")
	require.Contains(t, out, "linger, feature render pool: none (0): a released seat is free at once\n")
}

func TestPolicySetSendsTheDocument(t *testing.T) {
	f := &policyAdmin{policy: nightPolicy()}
	path := writeFile(t, "policy.json", runPolicyOK(t, f, "policy", "get", "lic_cad", "-o", "json"))
	out := runPolicyOK(t, f, "policy", "set", "lic_cad", "-f", path)
	req := f.requests["SetLicensePolicy"].(*seatdv1.SetLicensePolicyRequest)
	require.Equal(t, "lic_cad", req.GetLicenseId())
	require.Len(t, req.GetPolicy().GetRules(), 4)
	require.True(t, proto.Equal(nightPolicy().GetRules()[3], req.GetPolicy().GetRules()[3]))
	require.Contains(t, out, "4 rule(s)")

	// snake_case field names, as the API documents them, read too.
	path = writeFile(t, "p.json", `{"rules": [{"kind": "KIND_MAX", "count": 1, "each_member": true, "subject": {"kind": "KIND_GROUP", "name": "night"}}]}`)
	runPolicyOK(t, f, "policy", "set", "lic_cad", "-f", path)
	require.True(t, f.requests["SetLicensePolicy"].(*seatdv1.SetLicensePolicyRequest).GetPolicy().GetRules()[0].GetEachMember())

	for _, args := range [][]string{
		{"policy", "set", "lic_cad"}, // no -f
		{"policy", "set", "lic_cad", "-f", writeFile(t, "bad.json", `{"rules": [{"kind": "RESERVE"}]}`)},
		{"policy", "set", "lic_cad", "-f", writeFile(t, "bad.json", `rules: []`)},
		{"policy", "set", "lic_cad", "-f", filepath.Join(t.TempDir(), "missing.json")},
		{"policy", "set", "-f", path}, // no license
	} {
		f := &policyAdmin{}
		r := runPolicy(t, f, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.True(t, strings.HasPrefix(r.err, "seatctl: ") && strings.Count(r.err, "\n") == 1, "%v: %q", args, r.err)
		require.Empty(t, f.requests, "%v asked seatd", args)
	}
}

// readmeOptions is the options file of the README's section "Who gets a
// seat: site policy", with a line seatd does not map and a linger.
const readmeOptions = `# ACME's cadsuite options
GROUP night alice carol
RESERVE 1 cadsuite GROUP night
MAX 1 cadsuite USER bob
EXCLUDE cadsuite USER intern
TIMEOUTALL 3600
LINGER cadsuite 60
GROUP day erin
`

func TestPolicyImportPutsGroupsThenSetsThePolicy(t *testing.T) {
	f := &policyAdmin{
		fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{{Id: "lic_cad", Seats: 3}}},
		groups:    []*seatdv1.IdentityGroup{{Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice"}}},
	}
	path := writeFile(t, "acme.opt", readmeOptions)
	out := runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite")
	require.Equal(t, []string{"PutGroup night", "SetLicensePolicy"}, f.calls, "the groups first, then the policy")
	put := f.requests["PutGroup"].(*seatdv1.PutGroupRequest)
	require.True(t, proto.Equal(&seatdv1.IdentityGroup{Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice", "carol"}}, put.GetGroup()), "%v", put.GetGroup())
	set := f.requests["SetLicensePolicy"].(*seatdv1.SetLicensePolicyRequest)
	want := nightPolicy().GetRules()[:3]
	require.Len(t, set.GetPolicy().GetRules(), 3)
	for i := range want {
		require.True(t, proto.Equal(want[i], set.GetPolicy().GetRules()[i]), "rule %d: %v", i, set.GetPolicy().GetRules()[i])
	}
	require.Len(t, set.GetPolicy().GetLinger(), 1, "LINGER cadsuite 60: the base pool's")
	require.Empty(t, set.GetPolicy().GetLinger()[0].GetFeature())
	require.Equal(t, time.Minute, set.GetPolicy().GetLinger()[0].GetDuration().AsDuration())

	// Line by line: what it could not map, and what it does.
	require.Contains(t, out, path+": not mapped as written:\n")
	require.Contains(t, out, "  line 6: TIMEOUTALL 3600\n      TIMEOUTALL is not mapped: seatd reclaims a seat when its lease misses its heartbeats")
	require.NotContains(t, out, "LINGER", "a linger is mapped")
	require.Contains(t, out, "  set the site policy, replacing the license's: 3 rule(s), 1 linger(s)\n")
	require.Contains(t, out, "    linger, base pool: a released seat stays counted 1m for its client to take back\n")
	require.Contains(t, out, "  group day: not put: no rule names it\n")
	require.Contains(t, out, "to do on license lic_cad:\n")
	require.Contains(t, out, "  put group night: alice, carol (replaces group night (alice): every policy naming it follows)\n")
	require.Contains(t, out, "    0  reserve, base pool: 1 seat(s) kept for group night\n")
	require.Contains(t, out, "    2  exclude, base pool: user intern is refused\n")
	require.True(t, strings.HasSuffix(out, "put group night\nset the site policy of license lic_cad: 3 rule(s), 1 linger(s)\n"), out)

	// A group already as the file has it is not put again.
	f.groups[0].Members = []string{"alice", "carol"}
	f.calls = nil
	out = runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite")
	require.Equal(t, []string{"SetLicensePolicy"}, f.calls)
	require.Contains(t, out, "  group night: already as the file has it\n")

	// -o json: the notes, the groups put and the policy, as the API has them.
	var view ImportView
	require.NoError(t, json.Unmarshal([]byte(runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite", "-o", "json")), &view))
	require.False(t, view.DryRun)
	require.Len(t, view.Notes, 2, "TIMEOUTALL, group day: %v", view.Notes)
	require.Equal(t, 6, view.Notes[0].Line)
	require.Zero(t, view.Notes[1].Line)
	var p seatdv1.LicensePolicy
	require.NoError(t, protojson.Unmarshal(view.Policy, &p))
	require.Len(t, p.GetRules(), 3)
}

func TestPolicyImportDryRunChangesNothing(t *testing.T) {
	f := &policyAdmin{fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{{Id: "lic_cad", Seats: 3}}}}
	path := writeFile(t, "acme.opt", readmeOptions)
	out := runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite", "--dry-run")
	require.Empty(t, f.calls)
	require.Contains(t, out, "would do on license lic_cad (dry run):\n")
	require.Contains(t, out, "  put group night: alice, carol (new)\n")
	require.True(t, strings.HasSuffix(out, "dry run: validated, nothing changed\n"), out)
	var view ImportView
	require.NoError(t, json.Unmarshal([]byte(runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite", "--dry-run", "-o", "json")), &view))
	require.True(t, view.DryRun)
	require.Len(t, view.Groups, 1)
	require.Empty(t, f.calls)
}

// What seatd would refuse is refused before anything is written: a usage
// error naming the field as seatd would.
func TestPolicyImportRefusesWhatSeatdWould(t *testing.T) {
	lic := &seatdv1.License{Id: "lic_cad", Seats: 3, Grants: []*seatdv1.FeatureGrant{{Id: "lic_cad.00000001", Feature: "render", Seats: 2}}}
	for _, tc := range []struct{ file, want string }{
		{"GROUP night alice\nRESERVE 4 cadsuite GROUP night\n", "rules: reservations of the base pool sum to 4, more than its 3 seats"},
		{"RESERVE 2 render USER a\nRESERVE 1 render USER b\n", "reservations of render sum to 3, more than its 2 seats"},
		{"TIMEOUTALL 3600\nEXCLUDE sim USER bob\n", "no rule could be mapped: nothing to set"},
	} {
		f := &policyAdmin{fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{lic}}}
		r := runPolicy(t, f, "policy", "import", "lic_cad", "-f", writeFile(t, "x.opt", tc.file), "--base-feature", "cadsuite")
		require.Equal(t, ExitUsage, r.code, "%s: %s", tc.file, r.err)
		require.Contains(t, r.err, tc.want)
		require.Empty(t, f.calls, "%s: nothing written", tc.file)
	}
	// Without --base-feature, the base pool's FlexNet name is no feature:
	// the note says how to name it.
	f := &policyAdmin{fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{lic}}}
	r := runPolicy(t, f, "policy", "import", "lic_cad", "-f", writeFile(t, "x.opt", readmeOptions), "--dry-run")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.out, `the license has no grant of feature "cadsuite" (if it is the license's base pool, say so with --base-feature cadsuite)`)
	require.Equal(t, ExitNotFound, runPolicy(t, f, "policy", "import", "lic_nope", "-f", writeFile(t, "x.opt", readmeOptions)).code)
}

// TestPolicyImportNeverChangesAGroupsKind: an options file that makes a
// tenant's group of hosts a group of users (or the other way round) is
// refused before anything is written, naming the group and the licenses
// whose policies name it. seatd refuses such a put only while a policy
// names the group, and import used to put the file's other groups first:
// a dry run said "validated", then the import changed those groups (and
// the policies of other licenses with them) and stopped short of the
// policy.
func TestPolicyImportNeverChangesAGroupsKind(t *testing.T) {
	hostGroup := func(name string) *seatdv1.PolicyRule {
		return &seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: name}}
	}
	newAdmin := func() *policyAdmin {
		return &policyAdmin{
			fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{{Id: "lic_cad", Seats: 3}, {Id: "lic_other", Seats: 3}, {Id: "lic_third", Seats: 3}}},
			groups: []*seatdv1.IdentityGroup{
				{Name: "day", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"erin"}},
				{Name: "night", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: []string{"node01"}},
			},
			policies: map[string]*seatdv1.LicensePolicy{
				"lic_other": {Rules: []*seatdv1.PolicyRule{hostGroup("night")}},
				"lic_third": {Rules: []*seatdv1.PolicyRule{hostGroup("other")}},
			},
		}
	}
	path := writeFile(t, "a.opt", "GROUP day zed\nGROUP night alice\nRESERVE 1 cadsuite GROUP day\nRESERVE 1 cadsuite GROUP night\n")
	for _, dry := range []bool{true, false} {
		f := newAdmin()
		args := []string{"policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite"}
		if dry {
			args = append(args, "--dry-run")
		}
		r := runPolicy(t, f, args...)
		require.Equal(t, ExitUsage, r.code, "dry run %v: %s", dry, r.err)
		require.Contains(t, r.err, "the tenant's host group night would become a group: import never changes a group's kind, and the policy of license lic_other names it as a host group")
		require.Contains(t, r.err, "nothing changed")
		require.NotContains(t, r.out, "validated")
		require.Contains(t, r.out, "  put group night: alice (refused: the tenant's host group night is of the other kind)\n")
		require.Empty(t, f.calls, "dry run %v: nothing written", dry)
	}

	// The policies cannot be read: the refusal names no license, and is a
	// refusal still.
	f := newAdmin()
	f.policyErr = status.Error(codes.PermissionDenied, "no")
	r := runPolicy(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite")
	require.Equal(t, ExitUsage, r.code, r.err)
	require.Contains(t, r.err, "import never changes a group's kind; give the file's group another name")
	require.Empty(t, f.calls)
}

// TestPolicyImportPutsNewGroupsFirst: the groups no policy names yet (new
// ones) are put before those the import replaces, so that a put that
// fails has changed no other license's policy; a failure says what was
// put before it.
func TestPolicyImportPutsNewGroupsFirst(t *testing.T) {
	f := &policyAdmin{
		fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{{Id: "lic_cad", Seats: 3}}},
		groups:    []*seatdv1.IdentityGroup{{Name: "day", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"erin"}}},
	}
	path := writeFile(t, "a.opt", "GROUP day zed\nGROUP night alice\nRESERVE 1 cadsuite GROUP day\nRESERVE 1 cadsuite GROUP night\n")
	runPolicyOK(t, f, "policy", "import", "lic_cad", "-f", path, "--base-feature", "cadsuite")
	require.Equal(t, []string{"PutGroup night", "PutGroup day", "SetLicensePolicy"}, f.calls)
}

func TestGroupsCommands(t *testing.T) {
	many := []string{"a", "b", "c", "d", "e", "f", "g"}
	f := &policyAdmin{groups: []*seatdv1.IdentityGroup{
		{Name: "farm", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: []string{"node01", "node02"}},
		{Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: many},
	}}
	out := runPolicyOK(t, f, "groups", "ls")
	require.Regexp(t, `NAME\s+KIND\s+MEMBERS\s+UPDATED\n`, out)
	require.Regexp(t, `farm\s+hosts\s+node01, node02\s+-\n`, out)
	require.Regexp(t, `night\s+users\s+a, b, c, d, e \(\+2 more\)\s+-\n`, out)
	var list seatdv1.ListGroupsResponse
	require.NoError(t, protojson.Unmarshal([]byte(runPolicyOK(t, f, "groups", "ls", "-o", "json")), &list))
	require.Len(t, list.GetGroups(), 2)
	require.Contains(t, runPolicyOK(t, &policyAdmin{}, "groups", "ls"), "(no groups)")

	out = runPolicyOK(t, f, "groups", "put", "night", "--users", "alice,bob", "--users", "carol")
	put := f.requests["PutGroup"].(*seatdv1.PutGroupRequest)
	require.True(t, proto.Equal(&seatdv1.IdentityGroup{Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice", "bob", "carol"}}, put.GetGroup()))
	require.Regexp(t, `members\s+alice, bob, carol\n`, out)
	runPolicyOK(t, f, "groups", "put", "farm", "--hosts", "node01", "--tenant", "acme")
	put = f.requests["PutGroup"].(*seatdv1.PutGroupRequest)
	require.Equal(t, seatdv1.IdentityGroup_KIND_HOSTS, put.GetGroup().GetKind())
	require.Equal(t, "acme", put.GetTenantId())

	require.Equal(t, "deleted group night\n", runPolicyOK(t, f, "groups", "rm", "night"))
	require.Equal(t, "night", f.requests["DeleteGroup"].(*seatdv1.DeleteGroupRequest).GetName())

	for _, args := range [][]string{
		{"groups", "put", "night"},
		{"groups", "put", "night", "--users", "a", "--hosts", "h"},
		{"groups", "put", "night", "--users", ""},
		{"groups", "put", "--users", "a"},
		{"groups", "rm"},
	} {
		f := &policyAdmin{}
		r := runPolicy(t, f, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Empty(t, f.requests, "%v asked seatd", args)
	}
}

// -f - reads standard input.
func TestReadInputFromStandardInput(t *testing.T) {
	c := &cobra.Command{}
	c.SetIn(strings.NewReader(`{"rules": []}`))
	data, err := readFileOrStdin(c, "-")
	require.NoError(t, err)
	require.Equal(t, `{"rules": []}`, string(data))
	require.Equal(t, "standard input", inputName("-"))
}

// seatctl status shows, apart from the seats in use, each pool's reserved
// seats with how many members hold (counted from the live leases'
// reserved_for against the policy's reserve rules; a host compared
// without case, a dropped reservation's holder not counted), and a
// lingering count (0: nothing lingers yet).
func TestStatusShowsReservedAndLingeringSeats(t *testing.T) {
	now := time.Now()
	subject := func(kind seatdv1.PolicySubject_Kind, name string) *seatdv1.PolicySubject {
		return &seatdv1.PolicySubject{Kind: kind, Name: name}
	}
	night, ws9 := subject(seatdv1.PolicySubject_KIND_GROUP, "night"), subject(seatdv1.PolicySubject_KIND_HOST, "WS-9")
	ann := subject(seatdv1.PolicySubject_KIND_USER, "ann")
	reserve := func(feature string, n int32, s *seatdv1.PolicySubject) *seatdv1.PolicyRule {
		return &seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_RESERVE, Feature: feature, Count: n, Subject: s}
	}
	lease := func(id, feature string, s *seatdv1.PolicySubject) *seatdv1.Lease {
		return &seatdv1.Lease{Id: id, LicenseId: "lic_cad", Feature: feature, State: seatdv1.LeaseState_LEASE_STATE_ACTIVE, ReservedFor: s}
	}
	plain := &seatdv1.License{Id: "lic_plain", Name: "Plain", Seats: 4, SeatsInUse: 1, Active: proto.Bool(true)}
	f := &policyAdmin{
		fakeAdmin: fakeAdmin{licenses: []*seatdv1.License{cadLicense(now), plain}, leases: []*seatdv1.Lease{
			lease("lse_1", "", night),
			lease("lse_2", "", subject(seatdv1.PolicySubject_KIND_HOST, "ws-9")),
			lease("lse_3", "render", ann),
			lease("lse_4", "", subject(seatdv1.PolicySubject_KIND_GROUP, "day")),                               // a reservation since dropped
			lease("lse_5", "", nil),                                                                            // a shared seat
			{Id: "lse_6", LicenseId: "lic_cad", State: seatdv1.LeaseState_LEASE_STATE_ACTIVE, Lingering: true}, // released, lingering
		}},
		policies: map[string]*seatdv1.LicensePolicy{"lic_cad": {Rules: []*seatdv1.PolicyRule{
			reserve("", 2, night), reserve("", 1, ws9), reserve("render", 3, ann),
			{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: subject(seatdv1.PolicySubject_KIND_USER, "bob")},
		}}},
	}
	r := runPolicy(t, f, "status")
	require.Equal(t, 0, r.code, r.err)
	lines := strings.Split(r.out, "\n")
	require.Regexp(t, `^LICENSE\s+NAME\s+IN USE\s+RESERVED\s+LINGERING\s+SEATS\s+WAITING\s`, lines[0])
	require.Regexp(t, `^lic_cad\s+ACME CAD\s+3\s+3 \(2 taken\)\s+1\s+20\s+0\s+6m\s`, lines[1], "night's 2 (1 taken) and WS-9's 1 (taken); one lingering")
	require.Regexp(t, `^  lic_cad\.00000001\s+render 2024\s+4\s+3 \(1 taken\)\s+0\s+5\s`, lines[2], "render's reservation, on its first grant")
	require.Regexp(t, `^  lic_cad\.00000002\s+render 2025\s+0\s+"\s+0\s+5 \+1\s`, lines[3], "ditto on its other grant")
	require.Regexp(t, `^  lic_cad\.00000003\s+sim \(all versions\)\s+1\s+-\s+0\s+2\s`, lines[4])
	require.Regexp(t, `^lic_plain\s+Plain\s+1\s+-\s+0\s+4\s`, lines[5])
	require.Contains(t, r.out, "(RESERVED: seats the site policy keeps for its reservations")
	lr := f.requests["ListLeases"].(*seatdv1.ListLeasesRequest)
	require.Equal(t, "lic_cad", lr.GetLicenseId(), "only a license with reservations has its leases read")
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, lr.GetState())

	// -o json: per license and pool.
	r = runPolicy(t, f, "status", "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var view StatusView
	require.NoError(t, json.Unmarshal([]byte(r.out), &view))
	require.Equal(t, []PoolStatus{
		{LicenseID: "lic_cad", Feature: "", Reserved: 3, ReservedTaken: 2, Lingering: 1},
		{LicenseID: "lic_cad", Feature: "render", Reserved: 3, ReservedTaken: 1},
		{LicenseID: "lic_cad", Feature: "sim"},
		{LicenseID: "lic_plain", Feature: ""},
	}, view.Pools)
	require.Contains(t, r.out, `"lingering": 0`)

	// A refused policy read fails the command, naming the cause.
	f.policyErr = status.Error(codes.PermissionDenied, "not yours")
	r = runPolicy(t, f, "status")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.err, "not yours")
}
