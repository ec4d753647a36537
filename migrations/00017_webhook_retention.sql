-- Webhook retention (server/retention.go: webhook_deliveries,
-- webhook_events; --retain-webhook-events).
--
-- The cleanup leader removes delivered and failed deliveries, then the
-- events fanned out that no delivery references any more, each older than
-- the cutoff, through these partial indexes (a pending delivery and an
-- event not yet fanned out are in neither, and never removed).
--
-- webhook_delivery_seqs keeps the last sequence number of a line
-- (endpoint, order key) whose deliveries were removed, so that its next
-- delivery still takes the next number (FanOut counts from the greater of
-- it and the line's deliveries): a receiver never sees a line's sequence
-- go back.

-- +goose Up
CREATE INDEX webhook_deliveries_done_idx ON webhook_deliveries (created_at) WHERE state <> 'pending';
CREATE INDEX webhook_events_done_idx ON webhook_events (at) WHERE fanned_out;

CREATE TABLE webhook_delivery_seqs (
    endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    order_key   text NOT NULL,
    last_seq    bigint NOT NULL,
    PRIMARY KEY (endpoint_id, order_key)
);

-- +goose Down
DROP TABLE webhook_delivery_seqs;
DROP INDEX webhook_events_done_idx;
DROP INDEX webhook_deliveries_done_idx;
