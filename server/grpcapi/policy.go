package grpcapi

import (
	"context"
	"fmt"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// Site policies and groups: the calls are tenant scoped as the license
// calls are (operator key, or the tenant's API key).

func (h *adminService) GetLicensePolicy(ctx context.Context, req *seatdv1.GetLicensePolicyRequest) (*seatdv1.GetLicensePolicyResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = licenseIDField(req.GetLicenseId())
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.GetPolicy(ctx, tenant, req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetLicensePolicyResponse{Policy: policyToProto(l)}, nil
}

func (h *adminService) SetLicensePolicy(ctx context.Context, req *seatdv1.SetLicensePolicyRequest) (*seatdv1.SetLicensePolicyResponse, error) {
	actor, tenant, err := licenseChange(ctx, req.GetTenantId(), req.GetLicenseId())
	if err == nil && req.GetPolicy() == nil {
		// A request without a policy (over REST: a PUT without a body) is
		// not taken for a removal: that is an empty policy, {}, sent on
		// purpose.
		err = server.Invalid("policy", "is required: the whole policy, or {} to remove the license's")
	}
	if err != nil {
		return nil, err
	}
	p, err := policyFromProto(req.GetPolicy())
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.SetPolicy(ctx, actor, tenant, req.GetLicenseId(), p)
	if err != nil {
		return nil, err
	}
	return &seatdv1.SetLicensePolicyResponse{Policy: policyToProto(l)}, nil
}

func (h *adminService) ListGroups(ctx context.Context, req *seatdv1.ListGroupsRequest) (*seatdv1.ListGroupsResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	gs, err := h.s.svc.ListGroups(ctx, tenant)
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListGroupsResponse{Groups: make([]*seatdv1.IdentityGroup, 0, len(gs))}
	for _, g := range gs {
		resp.Groups = append(resp.Groups, groupToProto(g))
	}
	return resp, nil
}

func (h *adminService) PutGroup(ctx context.Context, req *seatdv1.PutGroupRequest) (*seatdv1.PutGroupResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err == nil && req.GetGroup() == nil {
		err = server.Invalid("group", "is required")
	}
	if err != nil {
		return nil, err
	}
	g, err := groupFromProto(req.GetGroup())
	if err != nil {
		return nil, err
	}
	g, err = h.s.svc.PutGroup(ctx, p.Actor(), tenant, g)
	if err != nil {
		return nil, err
	}
	return &seatdv1.PutGroupResponse{Group: groupToProto(g)}, nil
}

func (h *adminService) DeleteGroup(ctx context.Context, req *seatdv1.DeleteGroupRequest) (*seatdv1.DeleteGroupResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	if err := h.s.svc.DeleteGroup(ctx, p.Actor(), tenant, req.GetName()); err != nil {
		return nil, err
	}
	return &seatdv1.DeleteGroupResponse{}, nil
}

func licenseIDField(id string) error {
	if err := required("license_id", id); err != nil {
		return err
	}
	return maxLen("license_id", id, 128)
}

var ruleKindFromProto = map[seatdv1.PolicyRule_Kind]server.RuleKind{
	seatdv1.PolicyRule_KIND_RESERVE: server.RuleReserve,
	seatdv1.PolicyRule_KIND_MAX:     server.RuleMax,
	seatdv1.PolicyRule_KIND_INCLUDE: server.RuleInclude,
	seatdv1.PolicyRule_KIND_EXCLUDE: server.RuleExclude,
}

var subjectKindFromProto = map[seatdv1.PolicySubject_Kind]server.SubjectKind{
	seatdv1.PolicySubject_KIND_USER:       server.SubjectUser,
	seatdv1.PolicySubject_KIND_HOST:       server.SubjectHost,
	seatdv1.PolicySubject_KIND_GROUP:      server.SubjectGroup,
	seatdv1.PolicySubject_KIND_HOST_GROUP: server.SubjectHostGroup,
}

var groupKindFromProto = map[seatdv1.IdentityGroup_Kind]server.SubjectKind{
	seatdv1.IdentityGroup_KIND_USERS: server.SubjectGroup,
	seatdv1.IdentityGroup_KIND_HOSTS: server.SubjectHostGroup,
}

// policyFromProto converts a LicensePolicy for the service, refusing an
// enum left unspecified or unknown (named as rules[2].kind or
// priorities[0].subject.kind, the field path over REST, whose body is the
// policy); the service checks the rest.
// Output-only fields (license_id, update_time) are ignored. A nil policy
// is none.
func policyFromProto(in *seatdv1.LicensePolicy) (*server.Policy, error) {
	if len(in.GetRules()) > server.MaxPolicyRules {
		return nil, server.Invalid("rules", "must be at most %d rules", server.MaxPolicyRules)
	}
	p := &server.Policy{Rules: make([]server.PolicyRule, 0, len(in.GetRules()))}
	for i, r := range in.GetRules() {
		f := fmt.Sprintf("rules[%d]", i)
		kind, ok := ruleKindFromProto[r.GetKind()]
		if !ok {
			return nil, enumProblem(f+".kind", int32(r.GetKind()), "KIND_RESERVE, KIND_MAX, KIND_INCLUDE or KIND_EXCLUDE")
		}
		subject, ok := subjectKindFromProto[r.GetSubject().GetKind()]
		if !ok {
			return nil, enumProblem(f+".subject.kind", int32(r.GetSubject().GetKind()), "KIND_USER, KIND_HOST, KIND_GROUP or KIND_HOST_GROUP")
		}
		if r.GetCount() < 0 {
			return nil, server.Invalid(f+".count", "must not be negative")
		}
		p.Rules = append(p.Rules, server.PolicyRule{
			Kind: kind, Feature: r.GetFeature(), Count: int(r.GetCount()),
			Subject:    server.Subject{Kind: subject, Name: r.GetSubject().GetName()},
			EachMember: r.GetEachMember(),
		})
	}
	var err error
	if p.Priorities, err = prioritiesFromProto(in.GetPriorities()); err != nil {
		return nil, err
	}
	return p, nil
}

// enumProblem refuses an enum value that is unspecified or unknown.
func enumProblem(field string, v int32, want string) error {
	if v == 0 {
		return server.Invalid(field, "is required: %s", want)
	}
	return server.Invalid(field, "unknown value %d: want %s", v, want)
}

// policyToProto shows a license's policy; a license without one shows an
// empty policy.
func policyToProto(l server.License) *seatdv1.LicensePolicy {
	out := &seatdv1.LicensePolicy{LicenseId: l.ID, Rules: []*seatdv1.PolicyRule{}}
	if l.Policy == nil {
		return out
	}
	out.UpdateTime = ts(l.Policy.UpdatedAt)
	for _, r := range l.Policy.Rules {
		out.Rules = append(out.Rules, &seatdv1.PolicyRule{
			Kind: ruleKindToProto[r.Kind], Feature: r.Feature, Count: int32(r.Count),
			Subject:    &seatdv1.PolicySubject{Kind: subjectKindToProto[r.Subject.Kind], Name: r.Subject.Name},
			EachMember: r.EachMember,
		})
	}
	out.Priorities = prioritiesToProto(l.Policy.Priorities)
	return out
}

var ruleKindToProto = invert(ruleKindFromProto)
var subjectKindToProto = invert(subjectKindFromProto)
var groupKindToProto = invert(groupKindFromProto)

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// groupFromProto converts an IdentityGroup for the service (which checks
// its name and members): an unspecified kind is refused here.
func groupFromProto(in *seatdv1.IdentityGroup) (server.Group, error) {
	kind, ok := groupKindFromProto[in.GetKind()]
	if !ok {
		return server.Group{}, enumProblem("group.kind", int32(in.GetKind()), "KIND_USERS or KIND_HOSTS")
	}
	if len(in.GetMembers()) > server.MaxGroupMembers {
		return server.Group{}, server.Invalid("group.members", "must be at most %d members", server.MaxGroupMembers)
	}
	return server.Group{Name: in.GetName(), Kind: kind, Members: in.GetMembers()}, nil
}

func groupToProto(g server.Group) *seatdv1.IdentityGroup {
	return &seatdv1.IdentityGroup{
		Name: g.Name, Kind: groupKindToProto[g.Kind], Members: g.Members,
		CreateTime: ts(g.CreatedAt), UpdateTime: ts(g.UpdatedAt),
	}
}
