package seatctl

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestPolicyGetShowsPriorities: a policy's priorities are a table of
// their own after the rules (level, pool, subject); a policy of
// priorities alone is a policy; -o json holds them, and policy set sends
// them back.
func TestPolicyGetShowsPriorities(t *testing.T) {
	p := nightPolicy()
	p.Priorities = []*seatdv1.PolicyPriority{
		{Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: "designers"}, Level: 10},
		{Feature: "render", Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: "farm"}, Level: -5},
	}
	f := &policyAdmin{policy: p}
	out := runPolicyOK(t, f, "policy", "get", "lic_cad")
	require.Regexp(t, `^site policy of license lic_cad, set \S+ \S+: 4 rule\(s\), 2 priorities\n`, out)
	require.Regexp(t, `3\s+max\s+feature render\s+2\s+host group farm \(each member\)\s+each member of host group farm holds at most 2\n`+
		`waiters for a seat \(WaitForSeat\) are served by level, highest first; a waiter no priority names is at level 0:\n`+
		`#\s+LEVEL\s+POOL\s+SUBJECT\n`+
		`0\s+10\s+base\s+group designers\n`+
		`1\s+-5\s+feature render\s+host group farm\n$`, out)

	var got seatdv1.LicensePolicy
	require.NoError(t, protojson.Unmarshal([]byte(runPolicyOK(t, f, "policy", "get", "lic_cad", "-o", "json")), &got))
	require.True(t, proto.Equal(p, &got), "%v", &got)

	alone := &seatdv1.LicensePolicy{LicenseId: "lic_cad", Priorities: p.GetPriorities()[:1]}
	out = runPolicyOK(t, &policyAdmin{policy: alone}, "policy", "get", "lic_cad")
	require.Regexp(t, `^site policy of license lic_cad, set .*?: 0 rule\(s\), 1 priority\n`+
		`waiters for a seat[^\n]*\n#\s+LEVEL\s+POOL\s+SUBJECT\n0\s+10\s+base\s+group designers\n$`, out)

	path := writeFile(t, "p.json", `{"priorities": [{"subject": {"kind": "KIND_USER", "name": "vip"}, "level": 7}]}`)
	out = runPolicyOK(t, f, "policy", "set", "lic_cad", "-f", path)
	sent := f.requests["SetLicensePolicy"].(*seatdv1.SetLicensePolicyRequest).GetPolicy()
	require.Len(t, sent.GetPriorities(), 1)
	require.EqualValues(t, 7, sent.GetPriorities()[0].GetLevel())
	require.Contains(t, out, "0 rule(s), 1 priority")
	require.Regexp(t, `0\s+7\s+base\s+user vip\n$`, out)
}
