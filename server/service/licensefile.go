package service

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/locked"
)

// LicenseFile is locked mode's license file (locked.Controller): set in
// Config, the service refuses every admin change of licenses and feature
// grants (they come from the file only, synced by the controller straight
// into the store) and answers GetLicenseFile and ReloadLicenseFile.
type LicenseFile interface {
	InForce() locked.Info
	Reload(ctx context.Context) (info locked.Info, changed bool, err error)
	// UsageExport signs the usage report's rows of [start, end) as the
	// file in force's usage export (locked.Controller.UsageExport).
	UsageExport(rows []server.UsageRow, start, end, now time.Time) (*licensefile.UsageExport, []byte, error)
}

// Locked reports whether the service runs in locked mode.
func (s *Service) Locked() bool { return s.licenseFile != nil }

// refuseLocked is the first step of every admin change of a license or
// a grant: LICENSE_FILE_LOCKED in locked mode.
func (s *Service) refuseLocked() error {
	if s.Locked() {
		return server.ErrLicenseFileLocked
	}
	return nil
}

// GetLicenseFile answers the license file in force.
func (s *Service) GetLicenseFile(context.Context) (locked.Info, error) {
	if !s.Locked() {
		return locked.Info{}, server.ErrLicenseFileNotConfigured
	}
	return s.licenseFile.InForce(), nil
}

// SignedLicenseFile answers the license file in force for a product to
// verify (its JWS and serial): anyone may ask, as for the JWKS, since the
// vendor's signature is what a product trusts, not seatd's answer.
func (s *Service) SignedLicenseFile(context.Context) (token string, serial int64, err error) {
	if !s.Locked() {
		return "", 0, server.ErrLicenseFileNotConfigured
	}
	in := s.licenseFile.InForce()
	return in.Token, in.Serial, nil
}

// ReloadLicenseFile reads the license file again (locked.Controller's
// Reload) and audits the outcome, a refusal too.
func (s *Service) ReloadLicenseFile(ctx context.Context, actor string) (locked.Info, bool, error) {
	if !s.Locked() {
		return locked.Info{}, false, server.ErrLicenseFileNotConfigured
	}
	info, changed, err := s.licenseFile.Reload(ctx)
	details := map[string]string{"serial": strconv.FormatInt(info.Serial, 10), "changed": strconv.FormatBool(changed)}
	action := "license_file.reload"
	if server.ErrorReason(err) == server.ReasonLicenseFileRefused {
		action = "license_file.refuse"
		var e *server.Error
		if errors.As(err, &e) {
			details["cause"], details["refused_serial"] = e.Metadata["cause"], e.Metadata["serial"]
		}
	}
	if err == nil || action == "license_file.refuse" {
		s.audit(ctx, actor, server.DefaultTenantID, action, "license_file", "", details)
	}
	return info, changed, err
}

// defaultExportWindow is a usage export's period when the call names no
// start: a month, the usual true-up.
const defaultExportWindow = 30 * 24 * time.Hour

// ExportUsage is the true-up export of [start, end) (end nil: now; start
// nil: defaultExportWindow before end), widened to whole seconds: the usage report of
// the default tenant (where the file's licenses are) in one bucket, the
// whole period, signed by the site key under the file in force. It is
// audited (license_file.usage_export): the site key's signature is the
// site's word to its vendor.
func (s *Service) ExportUsage(ctx context.Context, actor string, start, end *time.Time) (*licensefile.UsageExport, []byte, error) {
	if !s.Locked() {
		return nil, nil, server.ErrLicenseFileNotConfigured
	}
	now := s.now()
	e := now
	if end != nil {
		e = *end
	}
	st := e.Add(-defaultExportWindow)
	if start != nil {
		st = *start
	}
	// Widened to whole seconds, as the report widens to whole buckets:
	// a lease acquired a moment ago is in a period that ends now.
	st = st.UTC().Truncate(time.Second)
	if e = e.UTC(); e.Truncate(time.Second).Before(e) {
		e = e.Truncate(time.Second).Add(time.Second)
	}
	if !st.Before(e) {
		return nil, nil, server.Invalid("start_time", "must be at least a second before end_time")
	}
	rep, err := s.store.UsageReport(ctx, server.UsageQuery{
		TenantID: server.DefaultTenantID, Start: st, End: e, Bucket: e.Sub(st),
		Users: 1, MaxRows: server.MaxUsageRows,
	})
	if err != nil {
		return nil, nil, err
	}
	u, data, err := s.licenseFile.UsageExport(rep.Rows, st, e, now)
	if err != nil {
		return nil, nil, err
	}
	s.audit(ctx, actor, server.DefaultTenantID, "license_file.usage_export", "license_file", "", map[string]string{
		"serial": strconv.FormatInt(u.FileSerial, 10), "period_start": st.Format(time.RFC3339), "period_end": e.Format(time.RFC3339),
		"rows": strconv.Itoa(len(u.Rows)),
	})
	return u, data, nil
}
