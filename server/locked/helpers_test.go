package locked

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/licensefile"
)

// issued is when the test files are issued, a day ago (the stores judge
// expiries by their own clock: time.Now); during is an instant they are
// valid at.
var (
	issued = time.Now().UTC().Truncate(time.Second).Add(-24 * time.Hour)
	during = issued.Add(24 * time.Hour)
)

// fixture is a store with its default tenant, a vendor key pair and the
// store's site key.
type fixture struct {
	store      server.Store
	vendorPub  ed25519.PublicKey
	vendorPriv ed25519.PrivateKey
	site       SiteKey
	logs       *syncbuffer.Buffer
	dir        string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(t.Context(), server.Tenant{ID: server.DefaultTenantID, CreatedAt: time.Now()})
	require.NoError(t, err)
	pub, priv, err := licensefile.GenerateKey()
	require.NoError(t, err)
	site, err := EnsureSiteKey(t.Context(), st, nil, time.Now())
	require.NoError(t, err)
	return &fixture{store: st, vendorPub: pub, vendorPriv: priv, site: site, logs: &syncbuffer.Buffer{}, dir: t.TempDir()}
}

// file is a license file for the fixture's site: serial, the cad license
// (seats, with a render grant and a sim grant) and the viewer license.
func (x *fixture) file(serial int64, seats int, edit ...func(*licensefile.File)) *licensefile.File {
	f := &licensefile.File{
		Serial: serial, Customer: "Acme", IssuedAt: issued, NotAfter: issued.AddDate(1, 0, 0),
		SiteKey: licensefile.NewJWK(x.site.Public()),
		Licenses: []licensefile.License{
			{
				ID: "cad", Name: "ACME CAD", Seats: seats, Overdraft: 1, LeaseTTL: licensefile.Duration(6 * time.Minute),
				MaxBorrowDuration: licensefile.Duration(72 * time.Hour), MaxBorrowedSeats: 1,
				Grants: []licensefile.Grant{
					{ID: "render-2024", Feature: "render", Version: "2024.2", Seats: 2, ExpiresAt: issued.AddDate(0, 6, 0)},
					{ID: "sim", Feature: "sim", Seats: 1},
				},
			},
			{ID: "viewer", Name: "ACME Viewer", Seats: 100, LeaseTTL: licensefile.Duration(2 * time.Minute),
				LeasingStrategy: server.PerUser, AllowEarlyReturn: true, ExpiresAt: issued.AddDate(0, 3, 0)},
		},
	}
	for _, e := range edit {
		e(f)
	}
	return f
}

// signed is f signed by the fixture's vendor key.
func (x *fixture) signed(t *testing.T, f *licensefile.File) []byte {
	t.Helper()
	data, err := licensefile.Sign(f, x.vendorPriv)
	require.NoError(t, err)
	return data
}

// write puts data at the fixture's license file path and returns it.
func (x *fixture) write(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(x.dir, "site.lic")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// controller is a Controller of the fixture's file path on its store, at
// the clock *now.
func (x *fixture) controller(now *time.Time) *Controller {
	return New(Config{
		Path: filepath.Join(x.dir, "site.lic"), VendorKeys: []ed25519.PublicKey{x.vendorPub},
		Site: licensefile.Site{Key: x.site.Public()}, SiteKey: x.site, Store: x.store,
		Logger: slog.New(slog.NewTextHandler(x.logs, nil)), Now: func() time.Time { return *now },
	})
}

// sync runs Sync of f at during.
func (x *fixture) sync(t *testing.T, f *licensefile.File) Changes {
	t.Helper()
	c, err := Sync(t.Context(), x.store, f, during)
	require.NoError(t, err)
	return c
}

func (x *fixture) license(t *testing.T, id string) server.License {
	t.Helper()
	l, err := x.store.GetLicense(t.Context(), server.DefaultTenantID, id)
	require.NoError(t, err)
	return l
}

// acquire takes a seat of the license (of a feature's grant when feature
// is set) for fingerprint fp.
func (x *fixture) acquire(ctx context.Context, key, fp, feature string) (server.AcquireResult, error) {
	return x.store.Acquire(ctx, server.AcquireRequest{
		LicenseKey: key, Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID),
		TokenHash: server.HashSecret(fp), Feature: feature,
	})
}
