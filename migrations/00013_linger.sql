-- Lingering seats (issue 27, server/linger.go): a release of a lease of a
-- pool with a linger keeps the lease active and counted until the release
-- + the linger, for the same client to take back.
--
-- licenses.linger_us is how long a released seat of the row's pool
-- lingers (µs; 0: none): a license's row its base pool's, a grant's row
-- its feature's, from the license's policy, written with it (record.
-- SetPolicy, CreateGrant) so that the live settings of every pool say it
-- without reading the license's policy.
-- sessions.lingering marks an active lease released under a linger: its
-- expires_at is the linger's end and its last_heartbeat_at the release,
-- both written with the release (never behind), so that a rebuild after
-- a loss of Redis brings the linger back as it was; a lingering lease
-- that lapses ends as released (no cleanup event). An ended lease keeps
-- it: it ended in its linger.

-- +goose Up
ALTER TABLE licenses ADD COLUMN linger_us bigint NOT NULL DEFAULT 0 CHECK (linger_us >= 0);
ALTER TABLE sessions ADD COLUMN lingering boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE sessions DROP COLUMN lingering;
ALTER TABLE licenses DROP COLUMN linger_us;
