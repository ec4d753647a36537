package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The license the policy phases measure: issue 27's "a license with a
// policy of 10 groups × 100 members, reservations and caps". Its policy
// keeps policyReserve seats for each group, caps each member at
// policyMemberMax leases and each group as a whole at policyGroupMax,
// none of which bites during a phase: every acquisition is judged against
// all of it (the caller's two caps counted, every reservation's seats
// held counted) and granted. The callers are the groups' members in turn,
// so a phase's leases spread over all 1000 of them.
const (
	policyGroups    = 10
	policyMembers   = 100
	policyReserve   = 10
	policyMemberMax = 100_000
	policyGroupMax  = 1_000_000
)

// policyPool creates the license, its groups and its policy; nil (and a
// note) when the server has no site policies (a seatd from before issue
// 27, as BENCH_SEATD may be).
func (b *bench) policyPool(ctx context.Context) (*seatPool, error) {
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+b.opKey)
	admin := seatdv1.NewAdminServiceClient(b.conns[0])
	resp, err := admin.CreateLicense(actx, &seatdv1.CreateLicenseRequest{
		License: &seatdv1.License{Name: "load test policy", Seats: 1_000_000, LeaseTtl: durationpb.New(time.Hour)},
	})
	if err != nil {
		return nil, fmt.Errorf("create the policy license: %w", err)
	}
	lic := resp.GetLicense()
	p := newSeatPool("policy", lic.GetKey(), "", "")
	policy := &seatdv1.LicensePolicy{}
	stamp := time.Now().UnixNano() // group names are the tenant's: one set per run
	for g := range policyGroups {
		name := fmt.Sprintf("bench-%d-g%d", stamp, g)
		group := &seatdv1.IdentityGroup{Name: name, Kind: seatdv1.IdentityGroup_KIND_USERS}
		for m := range policyMembers {
			user := fmt.Sprintf("user-%d-%d", g, m)
			group.Members = append(group.Members, user)
			p.users = append(p.users, user)
		}
		_, err := admin.PutGroup(actx, &seatdv1.PutGroupRequest{Group: group})
		if status.Code(err) == codes.Unimplemented {
			fmt.Fprintln(os.Stderr, "load: this seatd has no site policies; the policy phases are skipped:", err)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("put group %s: %w", name, err)
		}
		subject := &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: name}
		policy.Rules = append(policy.Rules,
			&seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: policyReserve, Subject: subject},
			&seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_MAX, Count: policyMemberMax, Subject: subject, EachMember: true},
			&seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_MAX, Count: policyGroupMax, Subject: subject})
	}
	if _, err := admin.SetLicensePolicy(actx, &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: policy}); err != nil {
		return nil, fmt.Errorf("set the policy: %w", err)
	}
	return p, nil
}
