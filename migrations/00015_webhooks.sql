-- Webhooks (issue 29, server/webhooks.go): the outbox and its deliveries.
--
-- webhook_events is the outbox (invariant 14): every statement that
-- revokes or expires a lease, borrows one, creates, updates or deletes a
-- license or revokes an API key inserts its event in the same
-- transaction. seq orders them (a lock of the changed row is taken before
-- the insert, so the events of one license take their seqs in the order
-- of their changes). Events of no change (license.expiring, .exhausted,
-- .peak) carry a dedupe_key, written once. fanned_out: the deliverer has
-- made the event's deliveries (webhook_deliveries), in the transaction
-- that sets it.
--
-- webhook_deliveries: one event on its way to one endpoint. seq numbers
-- the deliveries of one (endpoint, order_key): the first pending one of a
-- key is the only one tried, so a later event waits behind an earlier one.

-- +goose Up
CREATE TABLE webhook_events (
    seq        bigserial PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    type       text NOT NULL,
    at         timestamptz NOT NULL,
    tenant_id  text NOT NULL,
    license_id text NOT NULL DEFAULT '',
    subject_id text NOT NULL,
    dedupe_key text UNIQUE,
    data       jsonb NOT NULL,
    fanned_out boolean NOT NULL DEFAULT false
);
CREATE INDEX webhook_events_unfanned_idx ON webhook_events (seq) WHERE NOT fanned_out;

CREATE TABLE webhook_endpoints (
    id              text PRIMARY KEY,
    tenant_id       text NOT NULL REFERENCES tenants (id),
    url             text NOT NULL,
    types           text[] NOT NULL DEFAULT '{}',
    secrets         text[] NOT NULL,
    previous_until  timestamptz,
    description     text NOT NULL DEFAULT '',
    disabled        boolean NOT NULL DEFAULT false,
    disabled_reason text NOT NULL DEFAULT '',
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    event_seq       bigint NOT NULL REFERENCES webhook_events (seq),
    order_key       text NOT NULL,
    seq             bigint NOT NULL,
    state           text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    next_at         timestamptz,
    last_status     integer NOT NULL DEFAULT 0,
    last_error      text NOT NULL DEFAULT '',
    last_latency_us bigint NOT NULL DEFAULT 0,
    last_at         timestamptz,
    UNIQUE (endpoint_id, order_key, seq),
    UNIQUE (endpoint_id, event_seq)
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (endpoint_id, order_key, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_seq);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
DROP TABLE webhook_events;
