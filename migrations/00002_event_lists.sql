-- The event lists (ListUsageEvents, ListCleanupEvents) page through a
-- tenant's events by time, then lease id; the audit list has its index.

-- +goose Up
CREATE INDEX usage_events_tenant_ended_idx ON usage_events (tenant_id, ended_at, lease_id);
CREATE INDEX cleanup_events_tenant_cleaned_lease_idx ON cleanup_events (tenant_id, cleaned_at, lease_id);

-- +goose Down
DROP INDEX cleanup_events_tenant_cleaned_lease_idx;
DROP INDEX usage_events_tenant_ended_idx;
