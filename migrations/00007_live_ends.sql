-- A release or a revoke is recorded here first and only then removed from
-- Redis (end.lua). If that second step fails, or the instance dies between
-- the two, nothing else would remove a lease that never heartbeats (a
-- borrowed lease, an abandoned one) before its deadline: the statement that
-- records the end also notes the lease here, in the same transaction, and
-- the cleanup leader's reconciliation runs end.lua for the noted leases and
-- then clears their notes (record.PendingEnds, record.ClearEnds), in
-- batches. A note outlives any crash; a second end.lua is harmless.

-- +goose Up
CREATE TABLE live_ends (
    lease_id   text PRIMARY KEY,
    license_id text NOT NULL
);

-- +goose Down
DROP TABLE live_ends;
