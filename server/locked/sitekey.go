package locked

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/signing"
)

// siteKeyScope stands for a tenant where the site key is sealed (the
// additional data of signing.Sealer): no tenant id has parentheses, so a
// sealed site key never opens as a tenant's signing key, nor one of those
// as the site key.
const siteKeyScope = "(site)"

// SiteKey is the site's key: its private half, opened, and its kid.
type SiteKey struct {
	Private ed25519.PrivateKey
	ID      string
	// Sealed reports whether it is kept sealed at rest.
	Sealed bool
}

// Public is the site key's public half.
func (k SiteKey) Public() ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

// EnsureSiteKey returns the site key the store keeps, making one (sealed
// by sealer when it encrypts) if the store has none: every instance of a
// distributed seatd then holds the one the first of them made, as the
// license file it will serve must name one key. Kept in the store, not in
// a file beside the data dir, for that reason: an instance has no data
// dir of its own in distributed mode.
func EnsureSiteKey(ctx context.Context, store server.LicenseFileStore, sealer *signing.Sealer, now time.Time) (SiteKey, error) {
	stored, err := store.EnsureSiteKey(ctx, server.SigningKey{})
	if err != nil {
		return SiteKey{}, fmt.Errorf("site key: %w", err)
	}
	if stored.ID == "" {
		k, err := signing.NewKey(siteKeyScope, now, sealer)
		if err != nil {
			return SiteKey{}, fmt.Errorf("site key: %w", err)
		}
		k.TenantID = ""
		if stored, err = store.EnsureSiteKey(ctx, k); err != nil {
			return SiteKey{}, fmt.Errorf("site key: %w", err)
		}
	}
	return openSiteKey(stored, sealer)
}

// ImportSiteKey makes priv (a key `seatctl site keygen` made, for which a
// file was signed already) the site key, sealed by sealer, unless the
// store has a site key: then it must be that one.
func ImportSiteKey(ctx context.Context, store server.LicenseFileStore, priv ed25519.PrivateKey, sealer *signing.Sealer, now time.Time) (SiteKey, error) {
	pub := priv.Public().(ed25519.PublicKey)
	kid := signing.KeyID(pub)
	sealed, err := sealer.Seal(siteKeyScope, kid, priv.Seed())
	if err != nil {
		return SiteKey{}, fmt.Errorf("site key: %w", err)
	}
	stored, err := store.EnsureSiteKey(ctx, server.SigningKey{
		ID: kid, PublicKey: pub, PrivateKey: sealed, CreatedAt: now.UTC().Truncate(time.Microsecond),
	})
	if err != nil {
		return SiteKey{}, fmt.Errorf("site key: %w", err)
	}
	if stored.ID != kid {
		return SiteKey{}, fmt.Errorf("site key: this seatd has a site key already (%s), not %s: a site has one key, which its license files name", stored.ID, kid)
	}
	return openSiteKey(stored, sealer)
}

func openSiteKey(k server.SigningKey, sealer *signing.Sealer) (SiteKey, error) {
	k.TenantID = siteKeyScope
	priv, err := sealer.Open(k)
	if err != nil {
		return SiteKey{}, fmt.Errorf("site key: %w", err)
	}
	return SiteKey{Private: priv, ID: k.ID, Sealed: signing.Sealed(k.PrivateKey)}, nil
}

// MachineIDPath is where systemd keeps the host's machine-id.
const MachineIDPath = "/etc/machine-id"

// ThisHost is this host's identity as a license file may bind to it:
// its hostname, and its machine-id read from machineIDPath ("" for what
// cannot be read: a file bound to it is then refused, naming it).
func ThisHost(machineIDPath string) (hostname, machineID string) {
	hostname, _ = os.Hostname()
	if b, err := os.ReadFile(machineIDPath); err == nil {
		machineID = strings.TrimSpace(string(b))
	}
	return hostname, machineID
}

// Request is the site request for k (licensefile.MakeRequest), for the
// site named name, with this host's identity when given.
func Request(k SiteKey, name, hostname, machineID string, now time.Time) ([]byte, error) {
	return licensefile.MakeRequest(licensefile.SiteRequest{
		Name: name, CreatedAt: now, Hostname: hostname, MachineID: machineID,
	}, k.Private)
}
