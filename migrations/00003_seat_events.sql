-- seat_events keeps what the usage report counts that no lease records:
-- acquisitions refused for want of a free seat (one per refused AcquireSeat
-- call) and waits that ended in a seat (WaitForSeat), with how long.

-- +goose Up
CREATE TABLE seat_events (
    id         text PRIMARY KEY,
    tenant_id  text NOT NULL,
    license_id text NOT NULL REFERENCES licenses (id),
    kind       text NOT NULL CHECK (kind IN ('denied', 'waited')),
    at         timestamptz NOT NULL,
    wait_us    bigint NOT NULL DEFAULT 0 CHECK (wait_us >= 0)
);
CREATE INDEX seat_events_tenant_at_idx ON seat_events (tenant_id, at);
CREATE INDEX seat_events_license_at_idx ON seat_events (license_id, at);
-- The usage report reads a tenant's leases acquired before its range ends.
CREATE INDEX sessions_tenant_acquired_idx ON sessions (tenant_id, acquired_at);

-- +goose Down
DROP INDEX sessions_tenant_acquired_idx;
DROP TABLE seat_events;
