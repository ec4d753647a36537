package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Site policies in distributed mode: kept in the record with the groups
// they name, judged by acquire_pools.lua in the same step as the count.

func mkGroup(t *testing.T, s *Store, tenantID, name string, kind server.SubjectKind, members ...string) server.Group {
	t.Helper()
	g, err := s.PutGroup(t.Context(), server.Group{TenantID: tenantID, Name: name, Kind: kind, Members: members})
	require.NoError(t, err)
	return g
}

func userSubject(name string) server.Subject  { return server.Subject{Kind: server.SubjectUser, Name: name} }
func groupSubject(name string) server.Subject { return server.Subject{Kind: server.SubjectGroup, Name: name} }

// TestPolicyIsKeptWithItsGroups: a policy is validated against the
// license and the tenant's groups (a bad one changes nothing), kept with
// the groups it names, returned by every license read, and bumps the
// license's settings version; a group change rewrites the policies naming
// it; a group named by a policy is not deleted.
func TestPolicyIsKeptWithItsGroups(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	mkGrant(t, s, lic, "render", "", 3, time.Time{})
	night := mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
	require.Equal(t, tn.ID, night.TenantID)
	require.False(t, night.CreatedAt.IsZero())

	before, err := s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)

	// Invalid: nothing changes.
	_, err = s.setPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Count: 1, Subject: groupSubject("day")},
	}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "rules[0].subject.name")
	_, err = s.setPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Feature: "render", Count: 4, Subject: groupSubject("night")},
	}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "reservations of render sum to 4, more than its 3 seats")
	row, err := s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, before.Version, row.Version, "a refused policy bumps nothing")
	require.Nil(t, row.Policy)

	_, err = s.setPolicy(t.Context(), tn.ID, "lic_nope", &server.Policy{})
	require.ErrorIs(t, err, server.ErrLicenseNotFound)
	other := mkTenant(t, s)
	_, err = s.setPolicy(t.Context(), other.ID, lic.ID, &server.Policy{})
	require.ErrorIs(t, err, server.ErrLicenseNotFound, "another tenant's license")

	p := &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Count: 2, Subject: groupSubject("night")},
		{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: userSubject("ann")},
	}}
	got, err := s.setPolicy(t.Context(), tn.ID, lic.ID, p)
	require.NoError(t, err)
	require.NotNil(t, got.Policy)
	require.Equal(t, p.Rules, got.Policy.Rules)
	require.Len(t, got.Policy.Groups, 1)
	require.Equal(t, []string{"ann", "bob"}, got.Policy.Groups[0].Members)
	require.Len(t, got.Grants, 1)

	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, before.Version+1, row.Version, "the settings version is bumped")
	require.Equal(t, row.Version, row.PolicyGen, "switched on at this version")
	grants, err := s.rec.PoolsOf(t.Context(), lic.ID, false)
	require.NoError(t, err)
	g, err := s.rec.License(t.Context(), grants[1])
	require.NoError(t, err)
	require.Equal(t, row.PolicyGen, g.PolicyGen, "the grant's pool knows its license has a policy")

	for name, read := range map[string]func() (server.License, error){
		"GetLicense":   func() (server.License, error) { return s.GetLicense(t.Context(), tn.ID, lic.ID) },
		"LicenseByKey": func() (server.License, error) { return s.LicenseByKey(t.Context(), lic.Key) },
		"ListLicenses": func() (server.License, error) {
			ls, _, err := s.ListLicenses(t.Context(), tn.ID, server.Page{})
			if len(ls) != 1 {
				return server.License{}, err
			}
			return ls[0], err
		},
		"UpdateLicense": func() (server.License, error) {
			return s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Name = "renamed"; return nil })
		},
	} {
		l, err := read()
		require.NoError(t, err, name)
		require.NotNil(t, l.Policy, name)
		require.Equal(t, p.Rules, l.Policy.Rules, name)
		require.Equal(t, []string{"ann", "bob"}, l.Policy.Groups[0].Members, name)
	}

	// A policy change keeps the generation: the index stays valid.
	gen := row.PolicyGen
	p.Rules = append(p.Rules, server.PolicyRule{Kind: server.RuleExclude, Subject: userSubject("eve")})
	_, err = s.setPolicy(t.Context(), tn.ID, lic.ID, p)
	require.NoError(t, err)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, gen, row.PolicyGen)

	// A group change rewrites the policies naming it.
	v := row.Version
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob", "cid")
	l, err := s.GetLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"ann", "bob", "cid"}, l.Policy.Groups[0].Members)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, v+1, row.Version, "the group change bumps the license's version")
	_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "night", Kind: server.SubjectHostGroup, Members: []string{"h1"}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "rules[0].subject.name")
	gs, err := s.ListGroups(t.Context(), tn.ID)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	require.Equal(t, server.SubjectGroup, gs[0].Kind, "the refused kind change changed nothing")

	err = s.DeleteGroup(t.Context(), tn.ID, "night")
	requireCode(t, err, server.EPRECONDITION, server.ReasonGroupInUse)
	require.Contains(t, err.Error(), lic.ID)
	require.ErrorIs(t, s.DeleteGroup(t.Context(), tn.ID, "day"), server.ErrGroupNotFound)

	// None: the policy goes, the generation with it; the group may go.
	got, err = s.setPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{})
	require.NoError(t, err)
	require.Nil(t, got.Policy)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Zero(t, row.PolicyGen)
	require.NoError(t, s.DeleteGroup(t.Context(), tn.ID, "night"))
	gs, err = s.ListGroups(t.Context(), tn.ID)
	require.NoError(t, err)
	require.Empty(t, gs)

	_, err = s.PutGroup(t.Context(), server.Group{TenantID: "tnt_nope", Name: "x", Kind: server.SubjectGroup, Members: []string{"a"}})
	require.ErrorIs(t, err, server.ErrTenantNotFound)
	_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "x", Kind: "team", Members: []string{"a"}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
}
