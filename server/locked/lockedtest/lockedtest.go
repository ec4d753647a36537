// Package lockedtest makes license files for tests of locked mode: a
// vendor key pair, the site key of a store, and signed files for it.
package lockedtest

import (
	"crypto/ed25519"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/locked"
	"github.com/seatd/seatd/server/signing"
)

// Site is a vendor and the site of one store.
type Site struct {
	Store      server.Store
	VendorPub  ed25519.PublicKey
	VendorPriv ed25519.PrivateKey
	Key        locked.SiteKey
	// Path is where Write puts the license file.
	Path string
}

// New makes a vendor key pair and the store's site key (kept plain).
func New(t testing.TB, store server.Store) *Site {
	t.Helper()
	pub, priv, err := licensefile.GenerateKey()
	require.NoError(t, err)
	k, err := locked.EnsureSiteKey(t.Context(), store, nil, time.Now())
	require.NoError(t, err)
	return &Site{Store: store, VendorPub: pub, VendorPriv: priv, Key: k, Path: filepath.Join(t.TempDir(), "site.lic")}
}

// File is a file for the site, issued an hour ago for a year: the
// license "cad" (seat limit seats, a 60 s TTL) with a grant "render-2024"
// of 2 seats of feature render.
func (s *Site) File(serial int64, seats int) *licensefile.File {
	issued := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	return &licensefile.File{
		Serial: serial, Customer: "Acme", IssuedAt: issued, NotAfter: issued.AddDate(1, 0, 0),
		SiteKey: licensefile.NewJWK(s.Key.Public()),
		Licenses: []licensefile.License{{
			ID: "cad", Name: "ACME CAD", Seats: seats, LeaseTTL: licensefile.Duration(time.Minute),
			Grants: []licensefile.Grant{{ID: "render-2024", Feature: "render", Seats: 2}},
		}},
	}
}

// Write signs f with the vendor's key and writes it at Path.
func (s *Site) Write(t testing.TB, f *licensefile.File) {
	t.Helper()
	data, err := licensefile.Sign(f, s.VendorPriv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Path, data, 0o600))
}

// Controller is a Controller of Path for the site.
func (s *Site) Controller(log *slog.Logger) *locked.Controller {
	return locked.New(locked.Config{
		Path: s.Path, VendorKeys: []ed25519.PublicKey{s.VendorPub},
		Site: licensefile.Site{Key: s.Key.Public()}, SiteKey: s.Key, Store: s.Store, Logger: log,
	})
}

// Start writes File(serial, seats) and starts a Controller with it.
func (s *Site) Start(t testing.TB, serial int64, seats int) *locked.Controller {
	t.Helper()
	s.Write(t, s.File(serial, seats))
	c := s.Controller(nil)
	require.NoError(t, c.Start(t.Context()))
	return c
}

// Issuer is the Issuer of a locked seatd whose file in force c keeps:
// the site key signs the certificates of the file's licenses, as the
// daemon wires it.
func (s *Site) Issuer(t testing.TB, c *locked.Controller) *signing.Issuer {
	t.Helper()
	site, err := signing.NewSite(s.Key.Private, c)
	require.NoError(t, err)
	return signing.NewIssuer(s.Store, signing.IssuerOptions{Site: site})
}

// LicenseID is the seatd id of the file's license "cad".
var LicenseID = licensefile.LicenseID("cad")
