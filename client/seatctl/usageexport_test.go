package seatctl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

const testUsageExport = "-----BEGIN SEATD USAGE EXPORT-----\n{}\n-----END SEATD SIGNATURE-----\n"

func (f *fakeAdmin) ExportUsage(_ context.Context, req *seatdv1.ExportUsageRequest, _ ...grpc.CallOption) (*seatdv1.ExportUsageResponse, error) {
	return &seatdv1.ExportUsageResponse{
		UsageExport: testUsageExport, FileSerial: 7, SiteKeyId: "site-kid",
		PeriodStart: timestamppb.New(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)),
		PeriodEnd:   timestamppb.New(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)),
		Rows: []*seatdv1.UsageExportRow{
			{LicenseId: "cad", PeakSeats: 22, Denials: 3, SeatHours: 1234.5},
			{LicenseId: "cad", Feature: "render", PeakSeats: 2, SeatHours: 10},
		},
	}, f.keep("ExportUsage", req)
}

// TestUsageExportCommand: the period goes to ExportUsage; without
// --signed the rows are a table, with it the signed export is written as
// it came (to stdout or --out); --out without --signed is a usage error;
// a refusal (no license file) exits refused naming the reason.
func TestUsageExportCommand(t *testing.T) {
	t.Parallel()
	f := &fakeAdmin{}
	out := runOK(t, f, "usage", "export", "--since", "2026-03-01", "--until", "2026-04-01")
	req := f.requests["ExportUsage"].(*seatdv1.ExportUsageRequest)
	require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), req.GetStartTime().AsTime().UTC())
	require.Equal(t, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), req.GetEndTime().AsTime().UTC())
	require.Regexp(t, `usage export\s+license file serial 7, site key site-kid\n`, out)
	require.Regexp(t, `period\s+2026-03-01T00:00:00Z to 2026-04-01T00:00:00Z\n`, out)
	require.Regexp(t, `cad\s+-\s+22\s+3\s+1234.50\n`, out)
	require.Regexp(t, `cad\s+render\s+2\s+0\s+10.00\n`, out)

	require.Equal(t, testUsageExport, runOK(t, f, "usage", "export", "--signed"))

	path := filepath.Join(t.TempDir(), "usage.txt")
	r := runFake(t, f, "usage", "export", "--signed", "--out", path)
	require.Equal(t, ExitOK, r.code, r.err)
	require.Empty(t, r.out)
	require.Contains(t, r.err, "usage export of license file serial 7")
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, testUsageExport, string(written))

	r = runFake(t, f, "usage", "export", "--out", path)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "--signed")

	f.err = status.Error(codes.FailedPrecondition, "this seatd serves no license file")
	r = runFake(t, f, "usage", "export", "--signed")
	require.Equal(t, ExitRefused, r.code)
	require.Contains(t, r.err, "serves no license file")
}
