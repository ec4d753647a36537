-- Early return of borrowed seats (docs/concepts/borrowing.md): a license
-- may allow a borrowed lease to be released before its deadline. Its
-- certificate would stay valid offline until then, so the return records
-- it in returned_certificates, in the same statement as the release: the
-- tenant's signed list of returned certificates is read from it, the
-- borrow cap counts its rows until their expires_at (the certificate's
-- exp), and retention removes them a while after it.

-- +goose Up
ALTER TABLE licenses ADD COLUMN allow_early_return boolean NOT NULL DEFAULT false;
CREATE TABLE returned_certificates (
    lease_id    text PRIMARY KEY,
    tenant_id   text NOT NULL,
    license_id  text NOT NULL,
    expires_at  timestamptz NOT NULL,
    returned_at timestamptz NOT NULL
);
CREATE INDEX returned_certificates_tenant_idx ON returned_certificates (tenant_id, expires_at);
CREATE INDEX returned_certificates_license_idx ON returned_certificates (license_id, expires_at);
CREATE INDEX returned_certificates_expires_idx ON returned_certificates (expires_at);

-- +goose Down
DROP TABLE returned_certificates;
ALTER TABLE licenses DROP COLUMN allow_early_return;
