-- A denial's reason (SEATS_EXHAUSTED, or the site policy's rule: EXCLUDED,
-- USER_LIMIT, ...), so that the usage report counts denials by reason.
-- Denials recorded before it have '' (SEATS_EXHAUSTED then); waits have ''.

-- +goose Up
ALTER TABLE seat_events ADD COLUMN reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE seat_events DROP COLUMN reason;
