package grpcapi

import (
	"context"
	"time"

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

// ExportUsage: the operator's: the site key signs it, the site's word to
// its vendor.
func (h *adminService) ExportUsage(ctx context.Context, req *seatdv1.ExportUsageRequest) (*seatdv1.ExportUsageResponse, error) {
	p := principalFrom(ctx)
	if err := p.requireOperator(); err != nil {
		return nil, err
	}
	var start, end *time.Time
	if req.GetStartTime() != nil {
		t, err := optionalTime("start_time", req.GetStartTime())
		if err != nil {
			return nil, err
		}
		start = &t
	}
	if req.GetEndTime() != nil {
		t, err := optionalTime("end_time", req.GetEndTime())
		if err != nil {
			return nil, err
		}
		end = &t
	}
	u, data, err := h.s.svc.ExportUsage(ctx, p.Actor(), start, end)
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ExportUsageResponse{
		UsageExport: string(data), FileSerial: u.FileSerial, SiteKeyId: u.SiteKeyID,
		PeriodStart: ts(u.PeriodStart), PeriodEnd: ts(u.PeriodEnd), CreatedAt: ts(u.CreatedAt),
	}
	for _, r := range u.Rows {
		resp.Rows = append(resp.Rows, &seatdv1.UsageExportRow{
			LicenseId: r.LicenseID, Feature: r.Feature, PeakSeats: int32(r.PeakSeats), Denials: r.Denials, SeatHours: r.SeatHours,
		})
	}
	return resp, nil
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
