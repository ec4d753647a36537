-- Locked mode (docs/concepts/license-files.md): what every instance must
-- share beyond the licenses, one row each.
--
-- site_key is the site's Ed25519 key, which the license file names: the
-- first instance to make one stores it (INSERT ... ON CONFLICT DO NOTHING)
-- and every instance uses that one. private_key is kept as the signing
-- package gives it (sealed with AES-256-GCM when seatd has an encryption
-- key). No CHECK on the row: a violation's detail would show private_key
-- in PostgreSQL's log; the code only ever writes singleton true.
--
-- license_file is the license file in force: its serial only grows
-- (SetFileInForce compares and writes under the row's lock), so that an
-- instance started with an older file, or an older file put back, cannot
-- take over. The row exists from the start (serial 0: none), so that
-- every write is an UPDATE of a locked row.

-- +goose Up
CREATE TABLE site_key (
    singleton   boolean PRIMARY KEY DEFAULT true,
    kid         text NOT NULL,
    public_key  bytea NOT NULL,
    private_key bytea NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE license_file (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    serial    bigint NOT NULL,
    hash      text NOT NULL,
    set_at    timestamptz
);
INSERT INTO license_file (singleton, serial, hash, set_at) VALUES (true, 0, '', NULL);

-- +goose Down
DROP TABLE license_file;
DROP TABLE site_key;
