-- Features and versions (issue 26): a feature grant is a pool of its own
-- (invariant 12), kept as a row of licenses so that every per-license
-- statement (settings version and live epoch, the rebuild's snapshot under
-- the row lock, sessions.license_id, cleanup) works per pool unchanged.
-- A grant's row carries its pool's settings: its own seats, overdraft,
-- borrowing limits and dates, and copies of the settings it takes from its
-- license (TTL, revival, strategy, active, early return, name), which
-- UpdateLicense rewrites with the license; expires_at is the pool's (the
-- earlier of the grant's own, grant_expires_at, and the license's).
-- A grant's key is '': no client opens a grant by key.

-- +goose Up
ALTER TABLE licenses
    ADD COLUMN parent_id        text REFERENCES licenses (id), -- NULL: a license; else the grant's license
    ADD COLUMN feature          text,
    ADD COLUMN grant_version    text,
    ADD COLUMN starts_at        timestamptz,
    ADD COLUMN grant_expires_at timestamptz;
DROP INDEX licenses_key_live_key;
CREATE UNIQUE INDEX licenses_key_live_key ON licenses (key) WHERE deleted_at IS NULL AND parent_id IS NULL;
DROP INDEX licenses_tenant_created_idx;
CREATE INDEX licenses_tenant_created_idx ON licenses (tenant_id, created_at, id) WHERE deleted_at IS NULL AND parent_id IS NULL;
-- A license's grants.
CREATE INDEX licenses_parent_idx ON licenses (parent_id) WHERE parent_id IS NOT NULL;
ALTER TABLE sessions
    ADD COLUMN feature text NOT NULL DEFAULT '',
    ADD COLUMN version text NOT NULL DEFAULT '';
-- A denial or wait of a feature's request (the usage report's feature rows).
ALTER TABLE seat_events ADD COLUMN feature text NOT NULL DEFAULT '';

-- +goose Down
-- Grants become deleted licenses of keys nobody holds (their id).
UPDATE licenses SET key = id, deleted_at = COALESCE(deleted_at, now()) WHERE parent_id IS NOT NULL;
ALTER TABLE seat_events DROP COLUMN feature;
ALTER TABLE sessions DROP COLUMN version, DROP COLUMN feature;
DROP INDEX licenses_parent_idx;
DROP INDEX licenses_tenant_created_idx;
CREATE INDEX licenses_tenant_created_idx ON licenses (tenant_id, created_at, id) WHERE deleted_at IS NULL;
DROP INDEX licenses_key_live_key;
CREATE UNIQUE INDEX licenses_key_live_key ON licenses (key) WHERE deleted_at IS NULL;
ALTER TABLE licenses DROP COLUMN grant_expires_at, DROP COLUMN starts_at, DROP COLUMN grant_version,
    DROP COLUMN feature, DROP COLUMN parent_id;
