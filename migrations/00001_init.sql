-- seatd schema: PostgreSQL is the system of record (ARCHITECTURE.md,
-- "Distributed mode"). Redis holds the live leases; every row here is what survives a
-- Redis restart (invariant 7) and what the exactly-once records rest on
-- (invariant 5).
--
-- Times are timestamptz (microsecond precision, the precision the store
-- keeps everywhere). Durations are bigint microseconds (*_us).

-- +goose Up
CREATE TABLE tenants (
    id         text PRIMARY KEY,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants (id),
    name        text NOT NULL DEFAULT '',
    secret_hash text NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE UNIQUE INDEX api_keys_secret_hash_key ON api_keys (secret_hash);
-- ListAPIKeys: a tenant's keys, oldest first.
CREATE INDEX api_keys_tenant_created_idx ON api_keys (tenant_id, created_at, id);

CREATE TABLE licenses (
    id                text PRIMARY KEY,
    tenant_id         text NOT NULL REFERENCES tenants (id),
    key               text NOT NULL,
    name              text NOT NULL DEFAULT '',
    seats             integer NOT NULL CHECK (seats >= 0),
    overdraft         integer NOT NULL DEFAULT 0 CHECK (overdraft >= 0),
    lease_ttl_us      bigint NOT NULL CHECK (lease_ttl_us > 0),
    revival_window_us bigint NOT NULL DEFAULT 0 CHECK (revival_window_us >= 0),
    leasing_strategy  text NOT NULL,
    active            boolean NOT NULL,
    expires_at        timestamptz,           -- NULL: never
    metadata          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    deleted_at        timestamptz,           -- soft delete: history keeps the row
    -- version grows with every change; the Redis copy of the settings is
    -- only ever replaced by a higher version.
    version           bigint NOT NULL DEFAULT 1,
    -- live_epoch names the generation of the license's live state in Redis.
    -- A rebuild from this table bumps it; a lease granted by an older
    -- generation can no longer be recorded (see server/distributed/doc.go).
    live_epoch        bigint NOT NULL DEFAULT 0
);
-- A key opens one live license; a deleted license's key stops working.
CREATE UNIQUE INDEX licenses_key_live_key ON licenses (key) WHERE deleted_at IS NULL;
-- ListLicenses: a tenant's live licenses, oldest first.
CREATE INDEX licenses_tenant_created_idx ON licenses (tenant_id, created_at, id) WHERE deleted_at IS NULL;

-- sessions are the leases.
CREATE TABLE sessions (
    id                text PRIMARY KEY,
    license_id        text NOT NULL REFERENCES licenses (id),
    tenant_id         text NOT NULL,
    token_hash        text NOT NULL,         -- hex SHA-256 of the lease token
    token_seq         bigint NOT NULL DEFAULT 0, -- bumped by every token rotation
    fingerprint       text NOT NULL,
    "user"            text NOT NULL DEFAULT '',
    hostname          text NOT NULL DEFAULT '',
    metadata          jsonb NOT NULL DEFAULT '{}',
    idempotency_key   text NOT NULL DEFAULT '',
    dedupe_key        text NOT NULL DEFAULT '',
    state             text NOT NULL DEFAULT 'active'
                      CHECK (state IN ('active', 'released', 'expired', 'revoked')),
    acquired_at       timestamptz NOT NULL,
    last_heartbeat_at timestamptz NOT NULL,  -- written behind, in batches
    expires_at        timestamptz NOT NULL,  -- the deadline
    ended_at          timestamptz,
    expired_at        timestamptz,           -- set when cleanup expired it
    CHECK ((state = 'active') = (ended_at IS NULL))
);
-- ListLeases: newest first, with or without a state filter.
CREATE INDEX sessions_license_acquired_idx ON sessions (license_id, acquired_at DESC, id DESC);
CREATE INDEX sessions_license_state_acquired_idx ON sessions (license_id, state, acquired_at DESC, id DESC);
-- Rebuilds and deletes read the active leases of one license; the expiry
-- reconciliation reads active leases past their recorded deadline.
CREATE INDEX sessions_active_license_idx ON sessions (license_id) WHERE state = 'active';
CREATE INDEX sessions_active_expires_idx ON sessions (expires_at) WHERE state = 'active';

-- Exactly one usage event per ended lease (invariant 5).
CREATE TABLE usage_events (
    lease_id    text NOT NULL REFERENCES sessions (id),
    license_id  text NOT NULL,
    tenant_id   text NOT NULL,
    end_state   text NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    duration_us bigint NOT NULL,
    CONSTRAINT usage_events_lease_id_key UNIQUE (lease_id)
);
CREATE INDEX usage_events_license_idx ON usage_events (license_id, ended_at, lease_id);

-- Exactly one cleanup event per expired lease (invariant 5). The seed's
-- analytics queries read this table; its two indexes are the seed's.
CREATE TABLE cleanup_events (
    id                bigserial PRIMARY KEY,
    lease_id          text NOT NULL,
    license_id        text NOT NULL REFERENCES licenses (id),
    tenant_id         text NOT NULL,
    cleanup_type      text NOT NULL DEFAULT 'zombie',
    last_heartbeat_at timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    cleaned_at        timestamptz NOT NULL,
    metadata          jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT cleanup_events_lease_id_key UNIQUE (lease_id)
);
CREATE INDEX cleanup_events_cleaned_at_idx ON cleanup_events (cleaned_at);
CREATE INDEX cleanup_events_license_cleaned_at_idx ON cleanup_events (license_id, cleaned_at);
-- The zombie report is scoped to one tenant and a window.
CREATE INDEX cleanup_events_tenant_cleaned_at_idx ON cleanup_events (tenant_id, cleaned_at);

CREATE TABLE audit_log (
    id          text PRIMARY KEY,
    tenant_id   text NOT NULL,
    actor       text NOT NULL,
    action      text NOT NULL,
    resource    text NOT NULL DEFAULT '',
    resource_id text NOT NULL DEFAULT '',
    details     jsonb NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL
);
-- AuditLog: a tenant's entries, oldest first.
CREATE INDEX audit_log_tenant_at_idx ON audit_log (tenant_id, at, id);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE cleanup_events;
DROP TABLE usage_events;
DROP TABLE sessions;
DROP TABLE licenses;
DROP TABLE api_keys;
DROP TABLE tenants;
