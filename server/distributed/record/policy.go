package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Site policies and groups (migration 00011). A license's policy is a
// jsonb document on its row with the groups it names copied in
// (Policy.Groups), so that reading a license (one row) says how to judge
// it; a group change rewrites every policy naming it in the same
// transaction. Every write of a policy bumps the license's settings
// version, as a change of its grants does: an acquisition judges by the
// policy of one license version (server/distributed/policy.go).
//
// SetPolicy, PutGroup and DeleteGroup of one tenant run one at a time:
// each locks the tenant's row first (FOR NO KEY UPDATE: inserts that
// reference the tenant go on), so that a group cannot be deleted, or
// change kind, between a policy's validation and its write.

// lockTenant locks a tenant's row for a change of its groups or policies:
// ErrTenantNotFound if there is none.
func lockTenant(ctx context.Context, tx pgx.Tx, tenantID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return server.ErrTenantNotFound
	}
	return err
}

const groupCols = `tenant_id, name, kind, members, created_at, updated_at`

func scanGroup(row pgx.Row) (server.Group, error) {
	var (
		g    server.Group
		kind string
	)
	err := row.Scan(&g.TenantID, &g.Name, &kind, &g.Members, &g.CreatedAt, &g.UpdatedAt)
	g.Kind = server.SubjectKind(kind)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	if len(g.Members) == 0 {
		g.Members = nil
	}
	return g, err
}

// tenantGroups reads a tenant's groups by name.
func tenantGroups(ctx context.Context, q queryer, tenantID string) (map[string]server.Group, error) {
	rows, _ := q.Query(ctx, `SELECT `+groupCols+` FROM policy_groups WHERE tenant_id = $1`, tenantID)
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Group, error) { return scanGroup(r) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]server.Group, len(gs))
	for _, g := range gs {
		out[g.Name] = g
	}
	return out, nil
}

// EmptyPolicy reports whether p says nothing: no policy (nil, or no
// rules, lingers nor priorities).
func EmptyPolicy(p *server.Policy) bool {
	return p == nil || len(p.Rules) == 0 && len(p.Linger) == 0 && len(p.Priorities) == 0
}

// withGroups is a copy of p whose Groups are the groups it names, taken
// from groups (by name).
func withGroups(p *server.Policy, groups map[string]server.Group) *server.Policy {
	c := *p
	c.Rules, c.Linger, c.Priorities = slices.Clone(p.Rules), slices.Clone(p.Linger), slices.Clone(p.Priorities)
	c.Groups = nil
	for _, name := range c.GroupNames() {
		if g, ok := groups[name]; ok {
			g.Members = slices.Clone(g.Members)
			c.Groups = append(c.Groups, g)
		}
	}
	return &c
}

// checkGroupKind refuses g's kind if a rule or priority of p names the
// group as the other kind, with the error Policy.Validate gives it.
func checkGroupKind(p *server.Policy, g server.Group) error {
	check := func(field string, s server.Subject) error {
		if s.Kind.IsGroup() && s.Name == g.Name && s.Kind != g.Kind {
			return server.Invalid(field+".subject.name", "%q is a %s, not a %s", g.Name, g.Kind, s.Kind)
		}
		return nil
	}
	for i, r := range p.Rules {
		if err := check(fmt.Sprintf("rules[%d]", i), r.Subject); err != nil {
			return err
		}
	}
	for i, pr := range p.Priorities {
		if err := check(fmt.Sprintf("priorities[%d]", i), pr.Subject); err != nil {
			return err
		}
	}
	return nil
}

// policyJSON is a policy as the policy column holds it (nil: NULL).
func policyJSON(p *server.Policy) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	return json.Marshal(p)
}

// SetPolicy replaces a license's policy (an empty one: none), validated
// against its grants and the tenant's groups under the tenant's and the
// license's row locks, and bumps its version and its grants' (bumpGrants;
// policy_gen changes on all their rows when the policy is switched on or
// off), whose rows are returned in pools, to push. The license is
// returned with its grants. ErrLicenseNotFound; Validate's
// error as is.
func (pg *Postgres) SetPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (lic LicenseRow, pools []LicenseRow, _ error) {
	var invalid error // Validate's, returned as is
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		cur, err := pg.liveLicense(ctx, tx, tenantID, licenseID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		gs, err := pg.grantsOf(ctx, tx, licenseID)
		if err != nil {
			return err
		}
		cur.Grants = gs[licenseID]
		var next *server.Policy
		gen := int64(0)
		if !EmptyPolicy(p) {
			groups, err := tenantGroups(ctx, tx, tenantID)
			if err != nil {
				return err
			}
			if invalid = p.Validate(&cur.License, groups); invalid != nil {
				return invalid
			}
			next = withGroups(p, groups)
			gen = cur.PolicyGen
			if gen == 0 {
				gen = cur.Version + 1 // the version this write gives the license
			}
		}
		js, err := policyJSON(next)
		if err != nil {
			return err
		}
		lic, err = scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET policy = $2, policy_gen = $3, version = version + 1,
			updated_at = date_trunc('microseconds', clock_timestamp()), linger_us = $4
			WHERE id = $1 RETURNING `+licenseCols, licenseID, js, gen, next.LingerFor("").Microseconds()))
		if err != nil {
			return err
		}
		lic.Grants = cur.Grants
		if pools, err = bumpGrants(ctx, tx, licenseID, gen, next); err != nil {
			return err
		}
		_, err = insertEvent(ctx, tx, server.EventOfLicenseChange(server.ChangePolicy, &lic.License, nil, lic.UpdatedAt))
		return err
	})
	switch {
	case invalid != nil:
		return LicenseRow{}, nil, invalid
	case errors.Is(err, server.ErrTenantNotFound), server.ErrorReason(err) == server.ReasonLicenseNotFound:
		return LicenseRow{}, nil, server.ErrLicenseNotFound
	case err != nil:
		return LicenseRow{}, nil, pg.fail("set policy", err)
	}
	return lic, pools, nil
}

// bumpGrants bumps the settings version of every undeleted grant of the
// license, with the policy generation gen and each one's linger under p,
// and returns their rows, to push: a feature's acquisition judged under
// the policy before the change is recorded only at its pool's version (the
// record's insert checks it), so that none judged by the old policy is
// recorded once the change returned, even where its push has not landed.
func bumpGrants(ctx context.Context, tx pgx.Tx, licenseID string, gen int64, p *server.Policy) ([]LicenseRow, error) {
	lingers := map[string]int64{} // by feature, µs
	if p != nil {
		for _, lg := range p.Linger {
			lingers[lg.Feature] = p.LingerFor(lg.Feature).Microseconds()
		}
	}
	js, err := json.Marshal(lingers)
	if err != nil {
		return nil, err
	}
	rows, _ := tx.Query(ctx, `UPDATE licenses SET policy_gen = $2, version = version + 1,
			linger_us = COALESCE(($3::jsonb ->> feature)::bigint, 0)
		WHERE parent_id = $1 AND deleted_at IS NULL RETURNING `+licenseCols, licenseID, gen, js)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseRow, error) { return scanLicense(r) })
}

// namingSQL selects the undeleted licenses of tenant $1 whose policy may
// name group $2 (a rule's or a priority's subject of that name: the
// caller checks the kind, Policy.GroupNames).
const namingSQL = `SELECT ` + licenseCols + ` FROM licenses
	WHERE tenant_id = $1 AND parent_id IS NULL AND deleted_at IS NULL AND policy IS NOT NULL
		AND (policy->'rules' @> jsonb_build_array(jsonb_build_object('subject', jsonb_build_object('name', $2::text)))
			OR policy->'priorities' @> jsonb_build_array(jsonb_build_object('subject', jsonb_build_object('name', $2::text))))
	ORDER BY id`

// naming returns the licenses of the tenant whose policy names the group,
// by id, with lock appended to the query ("FOR NO KEY UPDATE").
func naming(ctx context.Context, tx pgx.Tx, tenantID, name, lock string) ([]LicenseRow, error) {
	rows, _ := tx.Query(ctx, namingSQL+" "+lock, tenantID, name)
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseRow, error) { return scanLicense(r) })
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, l := range all {
		if slices.Contains(l.Policy.GroupNames(), name) {
			out = append(out, l)
		}
	}
	return out, nil
}

// PutGroup creates or replaces a tenant's group and rewrites the policy
// of every license naming it (its version bumped), in one transaction
// under the tenant's row lock. It returns the group as stored and the
// licenses rewritten and their grants (bumpGrants), to push. QuotaExceeded past server.MaxTenantGroups;
// ErrTenantNotFound; a kind a policy naming the group refuses, with
// Policy.Validate's error.
func (pg *Postgres) PutGroup(ctx context.Context, g server.Group) (_ server.Group, lics, pools []LicenseRow, _ error) {
	var (
		out     server.Group
		refused error // returned as is
	)
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, g.TenantID); err != nil {
			return err
		}
		var exists bool
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*), bool_or(name = $2) IS TRUE FROM policy_groups WHERE tenant_id = $1`,
			g.TenantID, g.Name).Scan(&n, &exists); err != nil {
			return err
		}
		if !exists && n >= server.MaxTenantGroups {
			refused = tooManyGroups()
			return refused
		}
		var err error
		out, err = scanGroup(tx.QueryRow(ctx, `INSERT INTO policy_groups (tenant_id, name, kind, members, created_at, updated_at)
			VALUES ($1, $2, $3, $4, date_trunc('microseconds', clock_timestamp()), date_trunc('microseconds', clock_timestamp()))
			ON CONFLICT (tenant_id, name) DO UPDATE SET kind = EXCLUDED.kind, members = EXCLUDED.members,
				updated_at = EXCLUDED.updated_at
			RETURNING `+groupCols, g.TenantID, g.Name, string(g.Kind), nonNil(g.Members)))
		if err != nil {
			return err
		}
		named, err := naming(ctx, tx, g.TenantID, g.Name, "FOR NO KEY UPDATE")
		if err != nil || len(named) == 0 {
			return err
		}
		groups, err := tenantGroups(ctx, tx, g.TenantID)
		if err != nil {
			return err
		}
		for _, l := range named {
			if refused = checkGroupKind(l.Policy, out); refused != nil {
				return refused
			}
			js, err := policyJSON(withGroups(l.Policy, groups))
			if err != nil {
				return err
			}
			row, err := scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET policy = $2, version = version + 1
				WHERE id = $1 RETURNING `+licenseCols, l.ID, js))
			if err != nil {
				return err
			}
			lics = append(lics, row)
			gs, err := bumpGrants(ctx, tx, l.ID, row.PolicyGen, l.Policy)
			if err != nil {
				return err
			}
			pools = append(pools, gs...)
		}
		return nil
	})
	switch {
	case refused != nil:
		return server.Group{}, nil, nil, refused
	case errors.Is(err, server.ErrTenantNotFound):
		return server.Group{}, nil, nil, err
	case err != nil:
		return server.Group{}, nil, nil, pg.fail("put group", err)
	}
	return out, lics, pools, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// tooManyGroups refuses a group past server.MaxTenantGroups, as the
// service's quotas answer.
func tooManyGroups() error {
	return &server.Error{
		Code: server.EEXHAUSTED, Reason: server.ReasonQuotaExceeded,
		Message:  fmt.Sprintf("a tenant has at most %d groups: delete one first", server.MaxTenantGroups),
		Metadata: map[string]string{"quota": "groups", "limit": strconv.Itoa(server.MaxTenantGroups)},
	}
}

// DeleteGroup removes a tenant's group: ErrGroupNotFound if there is none
// (or no such tenant), GroupInUse if a policy names it.
func (pg *Postgres) DeleteGroup(ctx context.Context, tenantID, name string) error {
	var refused error
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		named, err := naming(ctx, tx, tenantID, name, "")
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM policy_groups WHERE tenant_id = $1 AND name = $2`, tenantID, name)
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			refused = server.ErrGroupNotFound
		case len(named) > 0:
			ids := make([]string, len(named))
			for i, l := range named {
				ids[i] = l.ID
			}
			refused = server.GroupInUse(name, ids)
		}
		return refused // rolls the delete back
	})
	switch {
	case refused != nil:
		return refused
	case errors.Is(err, server.ErrTenantNotFound):
		return server.ErrGroupNotFound
	case err != nil:
		return pg.fail("delete group", err)
	}
	return nil
}

// ListGroups lists a tenant's groups by name.
func (pg *Postgres) ListGroups(ctx context.Context, tenantID string) ([]server.Group, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT `+groupCols+` FROM policy_groups WHERE tenant_id = $1 ORDER BY name`, tenantID)
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Group, error) { return scanGroup(r) })
	if err != nil {
		return nil, pg.fail("list groups", err)
	}
	return gs, nil
}

// PolicyHolder is an active session as the policy index of its license
// takes it: its pool, who holds it and the reservation it took.
type PolicyHolder struct {
	LeaseID, PoolID, User, Hostname, Reservation string
}

// PolicyIndexSnapshot is what the policy index of a license is built from.
type PolicyIndexSnapshot struct {
	License LicenseRow        // PolicyGen 0: the license has no policy (any more)
	Pools   map[string]string // the undeleted pools, license's and grants': pool id -> feature ("" the license's)
	Holders []PolicyHolder    // their active sessions
}

// PolicyIndexSnapshot reads the active sessions of a license's pools
// under their row locks (FOR UPDATE), which wait for the acquisitions in
// the middle of recording a lease on them: every lease recorded after
// this read was granted after it. ErrLicenseNotFound if the license does
// not exist or is deleted.
func (pg *Postgres) PolicyIndexSnapshot(ctx context.Context, licenseID string) (PolicyIndexSnapshot, error) {
	var snap PolicyIndexSnapshot
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE (id = $1 OR parent_id = $1) AND deleted_at IS NULL ORDER BY id FOR UPDATE`, licenseID)
		pools, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseRow, error) { return scanLicense(r) })
		if err != nil {
			return err
		}
		if len(pools) == 0 || pools[0].ID != licenseID {
			return server.ErrLicenseNotFound
		}
		snap.License = pools[0]
		snap.Pools = make(map[string]string, len(pools))
		ids := make([]string, len(pools))
		for i, p := range pools {
			snap.Pools[p.ID], ids[i] = p.Feature, p.ID
		}
		if snap.License.PolicyGen == 0 {
			return nil
		}
		rows, _ = tx.Query(ctx, `SELECT id, license_id, "user", hostname, reservation FROM sessions
			WHERE license_id = ANY($1) AND state = 'active'`, ids)
		snap.Holders, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (PolicyHolder, error) {
			var (
				h   PolicyHolder
				res []byte
			)
			err := r.Scan(&h.LeaseID, &h.PoolID, &h.User, &h.Hostname, &res)
			h.Reservation = string(res)
			return h, err
		})
		return err
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return snap, err
	}
	if err != nil {
		return snap, pg.fail("read the holders of a policy", err)
	}
	return snap, nil
}

// PolicyLicense is a license with a policy as the prune of its index
// needs it: its settings version and its undeleted pools at that version
// (pool id -> feature, "" the license's own), read in one snapshot.
type PolicyLicense struct {
	Version int64
	Pools   map[string]string
}

// PolicyPools lists the undeleted licenses that have a policy, by id.
func (pg *Postgres) PolicyPools(ctx context.Context) (map[string]PolicyLicense, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT l.id, l.version, p.id, COALESCE(p.feature, '') FROM licenses l
		JOIN licenses p ON (p.id = l.id OR p.parent_id = l.id) AND p.deleted_at IS NULL
		WHERE l.policy IS NOT NULL AND l.deleted_at IS NULL AND l.parent_id IS NULL`)
	out := map[string]PolicyLicense{}
	var lic, pool, feature string
	var version int64
	_, err := pgx.ForEachRow(rows, []any{&lic, &version, &pool, &feature}, func() error {
		pl, ok := out[lic]
		if !ok {
			pl = PolicyLicense{Version: version, Pools: map[string]string{}}
			out[lic] = pl
		}
		pl.Pools[pool] = feature
		return nil
	})
	if err != nil {
		return nil, pg.fail("list licenses with a policy", err)
	}
	return out, nil
}

// policyRefusal is Policy.CheckChange of a change of a license's seats or
// grants, read in the change's transaction under the license's row lock
// (SetPolicy takes it too: the policy cannot change meanwhile). cur is the
// license's row; change turns a copy of it, with its grants, into the
// license as the change leaves it. refused is CheckChange's error, to
// return as is (nothing written); err is the record's.
func (pg *Postgres) policyRefusal(ctx context.Context, tx pgx.Tx, cur LicenseRow, change func(*server.License)) (refused, err error) {
	if cur.Policy == nil {
		return nil, nil
	}
	gs, err := pg.grantsOf(ctx, tx, cur.ID)
	if err != nil {
		return nil, err
	}
	prev := cur.License
	prev.Grants = gs[cur.ID]
	next := prev
	next.Grants = slices.Clone(prev.Grants)
	change(&next)
	return cur.Policy.CheckChange(&prev, &next), nil
}

// replaceGrant replaces (g set) or removes (g nil) the grant id among l's
// grants.
func replaceGrant(l *server.License, id string, g *server.Grant) {
	l.Grants = slices.DeleteFunc(l.Grants, func(old server.Grant) bool { return old.ID == id })
	if g != nil {
		l.Grants = append(l.Grants, *g)
	}
}
