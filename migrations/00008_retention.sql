-- Retention (server/retention) removes history older than a configured
-- age, oldest first and a batch at a time; each kind needs an index on its
-- time across tenants. The sessions index holds only ended sessions: no
-- heartbeat (an update of an active session) ever touches it, so
-- heartbeats stay HOT updates (migration 00006).
-- On a large table these builds lock writes to it for their duration
-- (goose runs a migration in a transaction, so not CONCURRENTLY).

-- +goose Up
CREATE INDEX sessions_ended_idx ON sessions (ended_at) WHERE state <> 'active';
CREATE INDEX seat_events_at_idx ON seat_events (at);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- +goose Down
DROP INDEX audit_log_at_idx;
DROP INDEX seat_events_at_idx;
DROP INDEX sessions_ended_idx;
