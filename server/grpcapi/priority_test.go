package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestPrioritiesRoundTrip: a policy's priorities convert to the domain and
// back unchanged, beside its rules.
func TestPrioritiesRoundTrip(t *testing.T) {
	t.Parallel()
	in := &seatdv1.LicensePolicy{
		Rules: []*seatdv1.PolicyRule{{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject("intern")}},
		Priorities: []*seatdv1.PolicyPriority{
			{Subject: groupSubject("designers"), Level: 10},
			{Feature: "render", Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: "farm"}, Level: -5},
			{Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST, Name: "ws-1"}},
		},
	}
	p, err := policyFromProto(in)
	require.NoError(t, err)
	require.Equal(t, server.Priority{Feature: "render", Subject: server.Subject{Kind: server.SubjectHostGroup, Name: "farm"}, Level: -5}, p.Priorities[1])
	out := policyToProto(server.License{ID: "lic_a", Policy: p})
	out.LicenseId = ""
	require.True(t, proto.Equal(in, out), "%v", out)
}

// TestPrioritiesOverTheAPI: SetLicensePolicy takes priorities (alone, or
// with rules) and GetLicensePolicy shows them; a bad one is refused naming
// the entry and field, and nothing is set. A waiter of a higher level is
// placed ahead of one that came first.
func TestPrioritiesOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	for field, bad := range map[string]*seatdv1.PolicyPriority{
		"priorities[0].subject.kind": {Subject: &seatdv1.PolicySubject{Name: "bob"}, Level: 1},
		"priorities[0].subject.name": {Subject: userSubject(""), Level: 1},
		"priorities[0].level":        {Subject: userSubject("bob"), Level: server.MaxPriorityLevel + 1},
		"priorities[0].feature":      {Feature: "sim", Subject: userSubject("bob"), Level: 1},
	} {
		_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Priorities: []*seatdv1.PolicyPriority{bad}}})
		requireInvalid(t, err, field)
	}
	_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{
		Priorities: make([]*seatdv1.PolicyPriority, server.MaxPolicyRules+1),
	}})
	requireInvalid(t, err, "priorities")
	got, err := e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Empty(t, got.GetPolicy().GetPriorities(), "nothing set")

	ps := []*seatdv1.PolicyPriority{{Subject: userSubject("vip"), Level: 5}}
	set, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Priorities: ps}})
	require.NoError(t, err)
	require.Len(t, set.GetPolicy().GetPriorities(), 1)
	require.True(t, proto.Equal(ps[0], set.GetPolicy().GetPriorities()[0]))
	require.NotNil(t, set.GetPolicy().GetUpdateTime(), "priorities alone are a policy")
	got, err = e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.True(t, proto.Equal(ps[0], got.GetPolicy().GetPriorities()[0]))

	e.acquire(t, lic.GetKey(), "holder")
	first, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "first", User: "ann"})
	require.NoError(t, err)
	pos, err := first.Recv()
	require.NoError(t, err)
	require.EqualValues(t, 1, pos.GetPosition().GetPosition())
	vip, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "vip", User: "vip"})
	require.NoError(t, err)
	pos, err = vip.Recv()
	require.NoError(t, err)
	require.EqualValues(t, 1, pos.GetPosition().GetPosition(), "level 5, ahead of ann")
	require.EqualValues(t, 2, pos.GetPosition().GetQueueLength())
}
