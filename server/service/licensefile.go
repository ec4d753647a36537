package service

import (
	"context"
	"errors"
	"strconv"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/locked"
)

// LicenseFile is locked mode's license file (locked.Controller): set in
// Config, the service refuses every admin change of licenses and feature
// grants (they come from the file only, synced by the controller straight
// into the store) and answers GetLicenseFile and ReloadLicenseFile.
type LicenseFile interface {
	InForce() locked.Info
	Reload(ctx context.Context) (info locked.Info, changed bool, err error)
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
