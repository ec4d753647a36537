package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestSeatctlPolicy runs seatctl's site policy and group commands against
// a real seatd. Embedded mode keeps and enforces policies: an options file
// imported (a dry run first, which changes nothing), the policy read back
// and set from its own JSON, groups put and kept while named, a client
// refused by the policy, status showing a reserved seat taken; distributed
// mode the same.
func TestSeatctlPolicy(t *testing.T) {
	t.Parallel()
	bin := buildSeatctl(t)
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testSeatctlPolicy(t, bin, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testSeatctlPolicy(t, bin, b.startSeatd(t, "ctlp-"+randomHex(3)))
	})
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func testSeatctlPolicy(t *testing.T, bin string, p *proc) {
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: p.OperatorKey}
	tenant := "pol-" + randomHex(3)
	c.ok("tenants", "create", "--id", tenant, "--name", "Policies")
	tc := func(args ...string) []string { return append([]string{"--tenant", tenant}, args...) }

	var lic seatdv1.License
	c.json(&lic, tc("licenses", "create", "--name", "ACME site", "--seats", "3", "--ttl", "1h")...)
	c.ok(tc("grants", "create", lic.GetId(), "--feature", "render", "--seats", "2")...)
	var farm seatdv1.IdentityGroup
	c.json(&farm, tc("groups", "put", "farm", "--hosts", "node01,node02")...)
	require.Equal(t, seatdv1.IdentityGroup_KIND_HOSTS, farm.GetKind())

	opts := writeTemp(t, "acme.opt", strings.Join([]string{
		"GROUP night alice carol",
		"RESERVE 1 cadsuite GROUP night",
		"MAX 1 cadsuite USER bob",
		"EXCLUDE cadsuite USER intern",
		"INCLUDE render HOST_GROUP farm",
		"HOST_GROUP farm node01 node02",
		"TIMEOUTALL 3600",
	}, "\n"))
	dry := c.ok(tc("policy", "import", lic.GetId(), "-f", opts, "--base-feature", "cadsuite", "--dry-run")...)
	require.Contains(t, dry, "line 7: TIMEOUTALL 3600")
	require.Contains(t, dry, "put group night: alice, carol (new)")
	require.Contains(t, dry, "host group farm: already as the file has it")
	require.Contains(t, dry, "dry run: validated, nothing changed")
	got, err := admin.GetLicensePolicy(op, &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	require.Empty(t, got.GetPolicy().GetRules(), "a dry run changes nothing")
	groups, err := admin.ListGroups(op, &seatdv1.ListGroupsRequest{TenantId: tenant})
	require.NoError(t, err)
	require.Len(t, groups.GetGroups(), 1, "a dry run changes nothing")

	out := c.ok(tc("policy", "import", lic.GetId(), "-f", opts, "--base-feature", "cadsuite")...)
	require.Contains(t, out, "set the site policy of license "+lic.GetId()+": 4 rule(s)")
	got, err = admin.GetLicensePolicy(op, &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	require.Len(t, got.GetPolicy().GetRules(), 4)
	var shown seatdv1.LicensePolicy
	c.json(&shown, tc("policy", "get", lic.GetId())...)
	require.True(t, proto.Equal(got.GetPolicy(), &shown), "policy get -o json is the API's: %v", &shown)
	require.Regexp(t, `3\s+include\s+feature render\s+-\s+host group farm\s`, c.ok(tc("policy", "get", lic.GetId())...))

	// The client meets it.
	_, err = p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "ws-9", User: "intern", Hostname: "ws-9"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "excludes user intern")

	// status shows night's reserved seat apart from the seats in use, and
	// taken once alice (of night) holds it.
	require.Regexp(t, `\n`+lic.GetId()+`\s+ACME site\s+0\s+1 \(0 taken\)\s+0\s+3\s`, c.ok(tc("status")...))
	_, err = p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "ws-alice", User: "alice", Hostname: "ws-alice"})
	require.NoError(t, err)
	require.Regexp(t, `\n`+lic.GetId()+`\s+ACME site\s+1\s+1 \(1 taken\)\s+0\s+3\s`, c.ok(tc("status")...))

	// set takes back what get -o json printed, changed.
	var doc seatdv1.LicensePolicy
	c.json(&doc, tc("policy", "get", lic.GetId())...)
	require.Equal(t, "bob", doc.GetRules()[1].GetSubject().GetName())
	doc.GetRules()[1].GetSubject().Name = "bobby"
	edited, err := protojson.Marshal(&doc)
	require.NoError(t, err)
	c.ok(tc("policy", "set", lic.GetId(), "-f", writeTemp(t, "p.json", string(edited)))...)
	got, err = admin.GetLicensePolicy(op, &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	require.Equal(t, "bobby", got.GetPolicy().GetRules()[1].GetSubject().GetName())
	msg := c.fails(ctlUsage, tc("policy", "set", lic.GetId(), "-f", writeTemp(t, "bad.json",
		`{"rules": [{"kind": "KIND_RESERVE", "count": 1, "subject": {"kind": "KIND_GROUP", "name": "day"}}]}`))...)
	require.Contains(t, msg, "rules[0].subject.name")

	// A group that a policy names is kept; once the policy is gone it goes.
	require.Contains(t, c.fails(ctlRefused, tc("groups", "rm", "night")...), "GROUP_IN_USE")
	require.Contains(t, c.ok(tc("groups", "ls")...), "alice, carol")
	c.ok(tc("policy", "set", lic.GetId(), "-f", writeTemp(t, "empty.json", `{}`))...)
	require.Equal(t, "deleted group night\n", c.ok(tc("groups", "rm", "night")...))
	c.fails(ctlNotFound, tc("groups", "rm", "night")...)
}

// TestSeatctlPolicyImportNeverHalfDone: an options file that would change
// the kind of a tenant's group (night, of hosts, named so by another
// license's policy) is refused by the dry run and by the import, naming
// the group and that license, before anything is written. It used to pass
// the dry run ("validated"), then put group day (changing the other
// license's exclusions with it), be refused at night, and leave the
// license's own policy unset. Putting night as a group of users directly
// is refused too, naming the license (GROUP_IN_USE).
func TestSeatctlPolicyImportNeverHalfDone(t *testing.T) {
	t.Parallel()
	bin := buildSeatctl(t)
	p := start(t, options{})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: p.OperatorKey}
	tenant := "half-" + randomHex(3)
	c.ok("tenants", "create", "--id", tenant, "--name", "Half")
	tc := func(args ...string) []string { return append([]string{"--tenant", tenant}, args...) }
	var other, lic seatdv1.License
	c.json(&other, tc("licenses", "create", "--name", "other", "--seats", "3", "--ttl", "1h")...)
	c.json(&lic, tc("licenses", "create", "--name", "site", "--seats", "3", "--ttl", "1h")...)
	c.ok(tc("groups", "put", "day", "--users", "erin")...)
	c.ok(tc("groups", "put", "night", "--hosts", "node01")...)
	c.ok(tc("policy", "set", other.GetId(), "-f", writeTemp(t, "o.json", `{"rules": [
		{"kind": "KIND_EXCLUDE", "subject": {"kind": "KIND_GROUP", "name": "day"}},
		{"kind": "KIND_EXCLUDE", "subject": {"kind": "KIND_HOST_GROUP", "name": "night"}}]}`))...)

	opts := writeTemp(t, "a.opt", strings.Join([]string{
		"GROUP day zed",
		"GROUP night alice",
		"RESERVE 1 cadsuite GROUP day",
		"RESERVE 1 cadsuite GROUP night",
	}, "\n"))
	for _, dry := range []bool{true, false} {
		args := tc("policy", "import", lic.GetId(), "-f", opts, "--base-feature", "cadsuite")
		if dry {
			args = append(args, "--dry-run")
		}
		msg := c.fails(ctlUsage, args...)
		require.Contains(t, msg, "the tenant's host group night would become a group: import never changes a group's kind, and the policy of license "+other.GetId()+" names it as a host group", "dry run %v", dry)
		require.Contains(t, msg, "nothing changed")
	}
	msg := c.fails(ctlRefused, tc("groups", "put", "night", "--users", "alice")...)
	require.Contains(t, msg, "GROUP_IN_USE")
	require.Contains(t, msg, `group "night" is a host_group, and the policy of license `+other.GetId()+" names it as one")

	got, err := admin.GetLicensePolicy(op, &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	require.Empty(t, got.GetPolicy().GetRules(), "no policy set")
	groups, err := admin.ListGroups(op, &seatdv1.ListGroupsRequest{TenantId: tenant})
	require.NoError(t, err)
	require.Len(t, groups.GetGroups(), 2)
	for _, g := range groups.GetGroups() {
		switch g.GetName() {
		case "day":
			require.Equal(t, []string{"erin"}, g.GetMembers(), "group day (and with it license %s's exclusions) unchanged", other.GetId())
		case "night":
			require.Equal(t, seatdv1.IdentityGroup_KIND_HOSTS, g.GetKind())
			require.Equal(t, []string{"node01"}, g.GetMembers())
		}
	}
}
