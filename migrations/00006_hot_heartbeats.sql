-- Heartbeats are written behind, one row update per heartbeat (a million
-- leases: tens of thousands a second). An update that changes no indexed
-- column is HOT (heap-only: no new index entries) when its page has room
-- for the new row version; the index on expires_at made every heartbeat
-- write an entry into each of the table's indexes (five times the cost).
-- The leader's reconciliation no longer reads that index: it pages
-- through the active sessions by id (record.ActivePage), which the index
-- below serves and which no heartbeat changes. Pages keep room for new
-- row versions (fillfactor); rows written before this migration move
-- into such pages as they are updated (VACUUM FULL sessions repacks the
-- table at once, under an exclusive lock).

-- +goose Up
CREATE INDEX sessions_active_id_idx ON sessions (id) WHERE state = 'active';
DROP INDEX sessions_active_expires_idx;
ALTER TABLE sessions SET (fillfactor = 80);

-- +goose Down
ALTER TABLE sessions RESET (fillfactor);
CREATE INDEX sessions_active_expires_idx ON sessions (expires_at) WHERE state = 'active';
DROP INDEX sessions_active_id_idx;
