package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server/locked"
)

// GetLicenseFile: any admin may read which file is in force (its terms
// are every tenant's licenses' limits).
func (h *adminService) GetLicenseFile(ctx context.Context, _ *seatdv1.GetLicenseFileRequest) (*seatdv1.GetLicenseFileResponse, error) {
	info, err := h.s.svc.GetLicenseFile(ctx)
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetLicenseFileResponse{LicenseFile: licenseFileToProto(info)}, nil
}

// ReloadLicenseFile: the operator's, as SIGHUP is: the file is the site's.
func (h *adminService) ReloadLicenseFile(ctx context.Context, _ *seatdv1.ReloadLicenseFileRequest) (*seatdv1.ReloadLicenseFileResponse, error) {
	p := principalFrom(ctx)
	if err := p.requireOperator(); err != nil {
		return nil, err
	}
	info, changed, err := h.s.svc.ReloadLicenseFile(ctx, p.Actor())
	if err != nil {
		return nil, err
	}
	return &seatdv1.ReloadLicenseFileResponse{LicenseFile: licenseFileToProto(info), Changed: changed}, nil
}

func licenseFileToProto(i locked.Info) *seatdv1.LicenseFile {
	return &seatdv1.LicenseFile{
		Serial: i.Serial, Customer: i.Customer, IssuedAt: ts(i.IssuedAt), NotAfter: ts(i.NotAfter),
		SiteKeyId: i.SiteKeyID, VendorKeyId: i.VendorKeyID, LicenseCount: int32(i.Licenses),
		Sha256: i.SHA256, InForceSince: ts(i.InForceSince),
	}
}

// GetSignedLicenseFile publishes the license file in force, as its JWS,
// for products to verify the chain of their certificates from the
// vendor's key; like the JWKS it needs no credentials (REST: GET
// /v1/license-file.jws, whose answer is the JWS as one JSON string).
func (h *seatService) GetSignedLicenseFile(ctx context.Context, _ *seatdv1.GetSignedLicenseFileRequest) (*seatdv1.GetSignedLicenseFileResponse, error) {
	token, serial, err := h.s.svc.SignedLicenseFile(ctx)
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetSignedLicenseFileResponse{LicenseFile: token, Serial: serial}, nil
}
