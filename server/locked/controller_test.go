package locked

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// TestStartPutsTheFileInForce: the store records the file and holds its
// licenses; InForce answers it.
func TestStartPutsTheFileInForce(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))
	info := c.InForce()
	require.Equal(t, int64(7), info.Serial)
	require.Equal(t, "Acme", info.Customer)
	require.Equal(t, x.site.ID, info.SiteKeyID)
	require.Equal(t, licensefile.KeyID(x.vendorPub), info.VendorKeyID)
	require.Equal(t, 2, info.Licenses)
	require.Len(t, info.SHA256, 64)
	require.False(t, info.InForceSince.IsZero())
	rec, err := x.store.FileInForce(t.Context())
	require.NoError(t, err)
	require.Equal(t, server.LicenseFileRecord{Serial: 7, Hash: info.SHA256, SetAt: rec.SetAt}, rec)
	require.Equal(t, 2, x.license(t, "lic_cad").Seats)
	require.Contains(t, x.logs.String(), `msg="license file in force"`)
}

// TestStartRefuses: a missing, tampered, foreign or expired file, or one
// older than the file in force, stops the start naming why; nothing is
// put in force.
func TestStartRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, x *fixture, now *time.Time)
		words []string
	}{
		{"missing", func(*testing.T, *fixture, *time.Time) {}, []string{"--license-file", "no such file"}},
		{"tampered", func(t *testing.T, x *fixture, _ *time.Time) {
			x.write(t, tamper(t, x.signed(t, x.file(7, 2))))
		}, []string{"refused", "readable payload differs from the signed payload"}},
		{"other vendor", func(t *testing.T, x *fixture, _ *time.Time) {
			_, other, err := licensefile.GenerateKey()
			require.NoError(t, err)
			data, err := licensefile.Sign(x.file(7, 2), other)
			require.NoError(t, err)
			x.write(t, data)
		}, []string{"refused", "signed by an unknown key"}},
		{"other site", func(t *testing.T, x *fixture, _ *time.Time) {
			pub, _, err := licensefile.GenerateKey()
			require.NoError(t, err)
			x.write(t, x.signed(t, x.file(7, 2, func(f *licensefile.File) { f.SiteKey = licensefile.NewJWK(pub) })))
		}, []string{"refused", "made for another site key"}},
		{"expired", func(t *testing.T, x *fixture, now *time.Time) {
			f := x.file(7, 2)
			x.write(t, x.signed(t, f))
			*now = f.NotAfter
		}, []string{"refused", "past its not_after"}},
		{"older than the file in force", func(t *testing.T, x *fixture, _ *time.Time) {
			_, err := x.store.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 8, Hash: "h8"})
			require.NoError(t, err)
			x.write(t, x.signed(t, x.file(7, 2)))
		}, []string{"refused", "serial 7 is not newer than the license file in force (serial 8)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t)
			now := during
			tc.setup(t, x, &now)
			before, err := x.store.FileInForce(t.Context())
			require.NoError(t, err)
			err = x.controller(&now).Start(t.Context())
			require.Error(t, err)
			for _, w := range tc.words {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "\n", "one line")
			after, err := x.store.FileInForce(t.Context())
			require.NoError(t, err)
			require.Equal(t, before, after, "nothing put in force")
			_, err = x.store.GetLicense(t.Context(), server.DefaultTenantID, "lic_cad")
			require.Equal(t, server.ENOTFOUND, server.ErrorCode(err), "no license synced")
		})
	}
}

// TestReloadOutcomes: each refused file is refused with its cause, logged
// in one line, the file in force kept; the file in force again changes
// nothing; a valid newer file takes effect at once.
func TestReloadOutcomes(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))
	ctx := t.Context()

	otherSite, _, err := licensefile.GenerateKey()
	require.NoError(t, err)
	refusals := []struct {
		cause string
		data  func() []byte
	}{
		{"tampered", func() []byte { return tamper(t, x.signed(t, x.file(8, 2))) }},
		{"malformed", func() []byte { return x.signed(t, x.file(8, 2))[:200] }},
		{"not_newer", func() []byte { return x.signed(t, x.file(6, 50)) }},
		{"not_newer", func() []byte { return x.signed(t, x.file(7, 50)) }}, // serial 7 again, other terms
		{"wrong_site", func() []byte {
			return x.signed(t, x.file(8, 50, func(f *licensefile.File) { f.SiteKey = licensefile.NewJWK(otherSite) }))
		}},
		{"expired", func() []byte {
			return x.signed(t, x.file(8, 50, func(f *licensefile.File) {
				f.IssuedAt, f.NotAfter = issued.AddDate(0, 0, -10), issued.Add(-time.Hour)
			}))
		}},
	}
	for _, r := range refusals {
		x.write(t, r.data())
		mark := len(x.logs.String())
		info, changed, err := c.Reload(ctx)
		logs := x.logs.String()[mark:]
		require.False(t, changed, r.cause)
		requireRefusal(t, err, r.cause)
		require.Equal(t, int64(7), info.Serial, "%s: the file in force stays", r.cause)
		require.Equal(t, int64(7), c.InForce().Serial)
		require.Equal(t, 1, strings.Count(logs, "\n"), "%s: one log line:\n%s", r.cause, logs)
		require.Contains(t, logs, "license file refused")
		require.Contains(t, logs, "cause="+r.cause)
		require.Equal(t, 2, x.license(t, "lic_cad").Seats, r.cause)
	}

	require.NoError(t, os.Remove(x.dir+"/site.lic"))
	_, _, err = c.Reload(ctx)
	requireRefusal(t, err, "unreadable")
	require.NotContains(t, err.Error(), x.dir, "the path stays in the log")

	x.write(t, x.signed(t, x.file(7, 2)))
	info, changed, err := c.Reload(ctx)
	require.NoError(t, err, "the file in force again")
	require.False(t, changed)
	require.Equal(t, int64(7), info.Serial)

	x.write(t, x.signed(t, x.file(8, 10)))
	info, changed, err = c.Reload(ctx)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, int64(8), info.Serial)
	require.Equal(t, 10, x.license(t, "lic_cad").Seats, "at once")
	rec, err := x.store.FileInForce(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(8), rec.Serial)
}

// TestWatch: a changed file is reloaded; another file put in force by
// another instance makes this one say why it is not ready; while they
// agree, the sync repairs what differs.
func TestWatch(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))
	ctx := t.Context()

	why, err := c.Watch(ctx)
	require.NoError(t, err)
	require.Empty(t, why)

	x.write(t, x.signed(t, x.file(8, 3)))
	why, err = c.Watch(ctx)
	require.NoError(t, err)
	require.Empty(t, why)
	require.Equal(t, int64(8), c.InForce().Serial, "a changed file is reloaded")
	require.Equal(t, 3, x.license(t, "lic_cad").Seats)

	x.write(t, tamper(t, x.signed(t, x.file(9, 3))))
	mark := len(x.logs.String())
	for range 2 {
		why, err = c.Watch(ctx)
		require.NoError(t, err)
		require.Empty(t, why, "a refused file leaves the file in force, and this instance ready")
	}
	require.Equal(t, 1, strings.Count(x.logs.String()[mark:], "license file refused"), "logged once per content")

	// A license changed behind the file's back (an instance that raced
	// this one with an older file): synced again.
	_, err = x.store.UpdateLicense(ctx, server.DefaultTenantID, "lic_cad", func(l *server.License) error {
		l.Seats = 999
		return nil
	})
	require.NoError(t, err)
	why, err = c.Watch(ctx)
	require.NoError(t, err)
	require.Empty(t, why)
	require.Equal(t, 3, x.license(t, "lic_cad").Seats)

	// Another instance puts serial 10 in force: this one is not ready
	// until it has that file.
	_, err = x.store.SetFileInForce(ctx, server.LicenseFileRecord{Serial: 10, Hash: "h10"})
	require.NoError(t, err)
	why, err = c.Watch(ctx)
	require.NoError(t, err)
	require.Contains(t, why, "serial 10")
	require.Contains(t, why, "serial 8")
}

// tamper edits the readable copy of a signed file: the first seats count
// becomes 200.
func tamper(t *testing.T, data []byte) []byte {
	t.Helper()
	out := bytes.Replace(data, []byte(`"seats": 2,`), []byte(`"seats": 200,`), 1)
	require.NotEqual(t, data, out, "tamper found no seats to edit")
	return out
}

func requireRefusal(t *testing.T, err error, cause string) {
	t.Helper()
	require.Error(t, err, cause)
	require.Equal(t, server.EPRECONDITION, server.ErrorCode(err), "%s: %v", cause, err)
	require.Equal(t, server.ReasonLicenseFileRefused, server.ErrorReason(err), "%s: %v", cause, err)
	var e *server.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, cause, e.Metadata["cause"], "%v", err)
	require.Equal(t, "7", e.Metadata["serial_in_force"])
}

// failingRecord is a store whose SetFileInForce fails while fail is set.
type failingRecord struct {
	server.Store
	fail bool
}

func (s *failingRecord) SetFileInForce(ctx context.Context, f server.LicenseFileRecord) (server.LicenseFileRecord, error) {
	if s.fail {
		return server.LicenseFileRecord{}, server.Unavailable(errors.New("injected"))
	}
	return s.Store.SetFileInForce(ctx, f)
}

// TestWatchRetriesAfterAStoreFailure: a changed file the store could not
// take is loaded again at the next look, not forgotten; the file in force
// stays meanwhile.
func TestWatchRetriesAfterAStoreFailure(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	st := &failingRecord{Store: x.store}
	x.store = st
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))

	x.write(t, x.signed(t, x.file(8, 4)))
	st.fail = true
	_, err := c.Watch(t.Context())
	require.Equal(t, server.EUNAVAILABLE, server.ErrorCode(err), "%v", err)
	require.Equal(t, int64(7), c.InForce().Serial)
	st.fail = false
	why, err := c.Watch(t.Context())
	require.NoError(t, err)
	require.Empty(t, why)
	require.Equal(t, int64(8), c.InForce().Serial)
	require.Equal(t, 4, x.license(t, "lic_cad").Seats)
}

// TestFileLicenseNamesTheFileInForce: what a certificate signed by the
// site key names (signing.SiteFiles): the serial of the file in force
// and the file's id of a license it holds, in the tenant Sync writes to;
// nothing before Start, for another license or tenant; a refused reload
// changes nothing, a newer file at once.
func TestFileLicenseNamesTheFileInForce(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	_, _, ok := c.FileLicense(server.DefaultTenantID, "lic_cad")
	require.False(t, ok, "no file in force before Start")
	require.NoError(t, c.Start(t.Context()))

	serial, id, ok := c.FileLicense(server.DefaultTenantID, "lic_cad")
	require.True(t, ok)
	require.Equal(t, int64(7), serial)
	require.Equal(t, "cad", id)
	_, id, ok = c.FileLicense(server.DefaultTenantID, "lic_viewer")
	require.True(t, ok)
	require.Equal(t, "viewer", id)
	for _, q := range [][2]string{{server.DefaultTenantID, "lic_nope"}, {server.DefaultTenantID, "cad"}, {"acme", "lic_cad"}} {
		_, _, ok := c.FileLicense(q[0], q[1])
		require.False(t, ok, "%v", q)
	}

	x.write(t, tamper(t, x.signed(t, x.file(8, 2))))
	_, _, err := c.Reload(t.Context())
	requireRefusal(t, err, "tampered")
	serial, _, _ = c.FileLicense(server.DefaultTenantID, "lic_cad")
	require.Equal(t, int64(7), serial, "a refused file names nothing")

	x.write(t, x.signed(t, x.file(8, 2, func(f *licensefile.File) { f.Licenses = f.Licenses[:1] })))
	_, changed, err := c.Reload(t.Context())
	require.NoError(t, err)
	require.True(t, changed)
	serial, _, ok = c.FileLicense(server.DefaultTenantID, "lic_cad")
	require.True(t, ok)
	require.Equal(t, int64(8), serial)
	_, _, ok = c.FileLicense(server.DefaultTenantID, "lic_viewer")
	require.False(t, ok, "a license the newer file dropped")
	require.Equal(t, c.InForce().Token, strings.TrimSpace(c.InForce().Token))
	require.NotEmpty(t, c.InForce().Token)
}

// TestHostBinding: a file bound to a host is served on that host (by
// hostname, whatever its case; by machine-id) and refused on another, at
// start and on reload (cause wrong_host), naming both hosts; a file bound
// to the site key only is served on any host.
func TestHostBinding(t *testing.T) {
	t.Parallel()
	const (
		hostname  = "lic1.plant.example"
		machineID = "0123456789abcdef0123456789abcdef"
	)
	bound := func(kind licensefile.HostKind, value string) func(*licensefile.File) {
		return func(f *licensefile.File) { f.Host = &licensefile.HostBinding{Kind: kind, Value: value} }
	}
	controllerOn := func(x *fixture, now *time.Time) *Controller {
		c := x.controller(now)
		c.cfg.Site.Hostname, c.cfg.Site.MachineID = hostname, machineID
		return c
	}
	for _, tc := range []struct {
		name string
		bind func(*licensefile.File)
		want string // "": served; else the words of the refusal
	}{
		{"site key only", func(*licensefile.File) {}, ""},
		{"this hostname", bound(licensefile.BindHostname, "LIC1.Plant.Example"), ""},
		{"this machine-id", bound(licensefile.BindMachineID, machineID), ""},
		{"another hostname", bound(licensefile.BindHostname, "lic2.plant.example"), `bound to another host: it is bound to hostname "lic2.plant.example", this host's is lic1.plant.example`},
		{"another machine-id", bound(licensefile.BindMachineID, "ffffffffffffffffffffffffffffffff"), "bound to another host: it is bound to machine-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t)
			now := during
			x.write(t, x.signed(t, x.file(7, 2, tc.bind)))
			err := controllerOn(x, &now).Start(t.Context())
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "--license-file")
			require.ErrorContains(t, err, tc.want)
			rec, err := x.store.FileInForce(t.Context())
			require.NoError(t, err)
			require.Zero(t, rec.Serial, "nothing put in force")

			// The same file as a reload of a running seatd: refused, the
			// file in force staying.
			x.write(t, x.signed(t, x.file(7, 2)))
			c := controllerOn(x, &now)
			require.NoError(t, c.Start(t.Context()))
			x.write(t, x.signed(t, x.file(8, 50, tc.bind)))
			info, changed, err := c.Reload(t.Context())
			require.False(t, changed)
			requireRefusal(t, err, "wrong_host")
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, int64(7), info.Serial)
			require.Equal(t, 2, x.license(t, "lic_cad").Seats)
		})
	}
}
