-- Site policies (issue 27): a license's policy is a jsonb document on its
-- row (server.Policy, with the groups it names copied in: a change of a
-- group rewrites every policy naming it, in the same transaction, so that
-- a license row alone says how its acquisitions are judged). Groups are
-- the tenant's, in policy_groups.
-- policy_gen is the settings version at which the license's policy was
-- last switched on (0: no policy), on the license's row and its grants':
-- the live state is told it (and to leave the revival of a lapsed lease
-- of such a license to the policy's judgement), and the policy index in
-- Redis is trusted only when it was built for that generation
-- (server/distributed/policy.go).
-- sessions.reservation is Lease.Reservation: the reservation whose seat
-- the lease took when granted (empty: a shared seat); bytea, as the key
-- holds a NUL between the subject's kind and name (server.Reservation.Key),
-- which text refuses.

-- +goose Up
ALTER TABLE licenses
    ADD COLUMN policy     jsonb,
    ADD COLUMN policy_gen bigint NOT NULL DEFAULT 0;
-- The licenses of a tenant that have a policy (a group change finds the
-- ones naming it among them).
CREATE INDEX licenses_tenant_policy_idx ON licenses (tenant_id) WHERE policy IS NOT NULL AND deleted_at IS NULL;
CREATE TABLE policy_groups (
    tenant_id  text NOT NULL REFERENCES tenants (id),
    name       text NOT NULL,
    kind       text NOT NULL,
    members    text[] NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
ALTER TABLE sessions ADD COLUMN reservation bytea NOT NULL DEFAULT ''::bytea;

-- +goose Down
ALTER TABLE sessions DROP COLUMN reservation;
DROP TABLE policy_groups;
DROP INDEX licenses_tenant_policy_idx;
ALTER TABLE licenses DROP COLUMN policy_gen, DROP COLUMN policy;
