-- Borrowing: a seat taken for offline use holds it until its deadline (or
-- its early return) with no heartbeats. The license says how long one
-- borrow may last (0: no borrowing) and how many may be out at once
-- (0: as many as the seat limit allows).

-- +goose Up
ALTER TABLE licenses
    ADD COLUMN max_borrow_us      bigint  NOT NULL DEFAULT 0 CHECK (max_borrow_us >= 0),
    ADD COLUMN max_borrowed_seats integer NOT NULL DEFAULT 0 CHECK (max_borrowed_seats >= 0);
ALTER TABLE sessions ADD COLUMN borrowed boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE sessions DROP COLUMN borrowed;
ALTER TABLE licenses DROP COLUMN max_borrowed_seats, DROP COLUMN max_borrow_us;
