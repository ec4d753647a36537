-- signing_keys holds the tenants' Ed25519 keys that sign lease
-- certificates. private_key is kept as the signing package gives it: sealed
-- with AES-256-GCM when seatd has an encryption key, else plain (a version
-- prefix tells which). A tenant has one key that signs (retired_at NULL,
-- is_next false) and one next key (is_next true): published in its JWKS ahead of
-- use, signing nothing until a rotation retires the key that signs and
-- makes the next one sign, in one transaction. The partial unique indexes
-- allow at most one of each per tenant. No CHECK on the row: a violation's
-- detail would show the whole row, private_key with it, in PostgreSQL's
-- log.

-- +goose Up
CREATE TABLE signing_keys (
    kid         text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants (id),
    public_key  bytea NOT NULL,
    private_key bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    is_next     boolean NOT NULL DEFAULT false,
    retired_at  timestamptz
);
CREATE UNIQUE INDEX signing_keys_current_idx ON signing_keys (tenant_id) WHERE retired_at IS NULL AND NOT is_next;
CREATE UNIQUE INDEX signing_keys_next_idx ON signing_keys (tenant_id) WHERE is_next;
CREATE INDEX signing_keys_tenant_created_idx ON signing_keys (tenant_id, created_at DESC, kid DESC);

-- +goose Down
DROP TABLE signing_keys;
