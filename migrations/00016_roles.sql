-- An API key's role in its tenant (viewer, manager, admin). Keys made
-- before roles administered their whole tenant: they are admin.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN role text NOT NULL DEFAULT 'admin'
    CHECK (role IN ('viewer', 'manager', 'admin'));

-- +goose Down
ALTER TABLE api_keys DROP COLUMN role;
