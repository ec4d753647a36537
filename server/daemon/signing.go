package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/signing"
)

// signingSealer is the sealer of the lease-signing keys: with the
// configured encryption key (the flag's value, or its file's), or none.
// Errors name the flag or the file, never the key.
func signingSealer(cfg Config) (*signing.Sealer, error) {
	if cfg.SigningKeyEncryptionKeyFile != "" {
		b, err := os.ReadFile(cfg.SigningKeyEncryptionKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--signing-key-encryption-key-file: %w", err)
		}
		s, err := signing.ParseEncryptionKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("--signing-key-encryption-key-file %s: %v", cfg.SigningKeyEncryptionKeyFile, err)
		}
		return s, nil
	}
	if cfg.SigningKeyEncryptionKey == "" {
		return nil, nil
	}
	s, err := signing.ParseEncryptionKey(cfg.SigningKeyEncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("--signing-key-encryption-key: %v", err)
	}
	return s, nil
}

// ensureSigningKey gives the default tenant its first signing key and its
// next key if it lacks them (after migration, so that the table exists) and
// checks that the key that signs for it opens: a key sealed under an encryption key seatd does not have
// stops the start here, with the reason, rather than failing every call.
func ensureSigningKey(ctx context.Context, issuer *signing.Issuer, sealer *signing.Sealer, log *slog.Logger) error {
	k, err := issuer.Ensure(ctx, server.DefaultTenantID)
	if err != nil {
		return fmt.Errorf("lease-signing key of tenant %q: %w", server.DefaultTenantID, err)
	}
	sealed := signing.Sealed(k.PrivateKey)
	log.Info("lease certificates signed", "tenant", server.DefaultTenantID, "kid", k.ID, "sealed", sealed, "encryption_key_id", sealer.KeyID())
	if !sealer.Encrypts() {
		log.Warn("signing keys are stored plain: anyone with the data file, a backup of it, or (distributed) the signing_keys table can forge lease certificates that clients accept; set SEATD_SIGNING_KEY_ENCRYPTION_KEY or --signing-key-encryption-key-file (openssl rand -base64 32, kept apart from the data) to seal new keys (docs/operations/configuration.md, \"Lease-signing keys at rest\")")
	}
	if sealer.Encrypts() && !sealed {
		log.Warn("the default tenant's signing key is kept plain (it was made before an encryption key was configured); RotateSigningKey (twice if the next key is plain too: signing-keys ls) makes a sealed one sign", "kid", k.ID)
	}
	return nil
}
