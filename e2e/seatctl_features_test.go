package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestSeatctlFeatures runs seatctl's feature commands against a real
// seatd, embedded and distributed: grants created, shown (licenses,
// status, leases), changed (only the flags given), deleted, and the
// usage report and export cut by feature.
func TestSeatctlFeatures(t *testing.T) {
	t.Parallel()
	bin := buildSeatctl(t)
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testSeatctlFeatures(t, bin, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testSeatctlFeatures(t, bin, b.startSeatd(t, "ctlf-"+randomHex(3)))
	})
}

func testSeatctlFeatures(t *testing.T, bin string, p *proc) {
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: p.OperatorKey}
	// A tenant of its own: the reports and exports below see only this.
	tenant := "feat-" + randomHex(3)
	c.ok("tenants", "create", "--id", tenant, "--name", "Features")
	tc := func(args ...string) []string { return append([]string{"--tenant", tenant}, args...) }

	// ---- a license with base seats, two grants of render and one of sim ----
	var lic seatdv1.License
	c.json(&lic, tc("licenses", "create", "--name", "ACME CAD", "--seats", "2", "--ttl", "1h")...)
	soon := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	later := time.Now().Add(400 * 24 * time.Hour).UTC().Truncate(time.Second)
	var r2024, r2025, sim seatdv1.FeatureGrant
	c.json(&r2024, tc("grants", "create", lic.GetId(), "--feature", "render", "--version", "2024", "--seats", "1",
		"--expires-at", soon.Format(time.RFC3339))...)
	require.Equal(t, lic.GetId(), r2024.GetLicenseId())
	require.True(t, strings.HasPrefix(r2024.GetId(), lic.GetId()+"."), r2024.GetId())
	require.Equal(t, "render", r2024.GetFeature())
	require.Equal(t, "2024", r2024.GetVersion())
	require.Equal(t, soon, r2024.GetExpiresAt().AsTime())
	c.json(&r2025, tc("grants", "create", lic.GetId(), "--feature", "render", "--version", "2025", "--seats", "2", "--overdraft", "1",
		"--expires-at", later.Format(time.RFC3339), "--max-borrow-duration", "72h", "--max-borrowed-seats", "1")...)
	require.Equal(t, 72*time.Hour, r2025.GetMaxBorrowDuration().AsDuration())
	c.json(&sim, tc("grants", "create", lic.GetId(), "--feature", "sim", "--seats", "1")...)
	require.Empty(t, sim.GetVersion(), "every version")

	// Bad input is refused naming the field, and nothing changes.
	require.Contains(t, c.fails(ctlUsage, tc("grants", "create", lic.GetId(), "--feature", "render", "--version", "2024.x", "--seats", "1")...), "version")
	require.Contains(t, c.fails(ctlUsage, tc("grants", "create", lic.GetId(), "--feature", "render", "--seats", "1",
		"--starts-at", "2030-01-02", "--expires-at", "2030-01-01")...), "expires_at")
	c.fails(ctlNotFound, tc("grants", "create", "lic_nosuchlicense", "--feature", "render", "--seats", "1")...)
	gl, err := admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	require.Len(t, gl.GetLicense().GetGrants(), 3, "the refused grants were not added")

	// ---- seats of each: a 2024 request takes the 2024 grant, 2026 is refused ----
	key := gl.GetLicense().GetKey()
	acquire := func(fp, feature, version string) (*seatdv1.AcquireSeatResponse, error) {
		return p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: fp, User: fp, Hostname: "host-" + fp,
			Feature: feature, Version: version})
	}
	render, err := acquire("ws-ann", "render", "2023.4")
	require.NoError(t, err)
	require.Equal(t, r2024.GetId(), render.GetLease().GetGrantId())
	_, err = acquire("ws-bob", "sim", "")
	require.NoError(t, err)
	_, err = acquire("ws-cat", "", "")
	require.NoError(t, err)
	_, err = acquire("ws-dan", "render", "2026")
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)

	// ---- licenses get / ls ----
	gl, err = admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: tenant})
	require.NoError(t, err)
	var got seatdv1.License
	c.json(&got, tc("licenses", "get", lic.GetId())...)
	requireProtoEqual(t, one(gl.GetLicense()), one(&got), "licenses get -o json vs GetLicense (grants included)")
	table := c.ok(tc("licenses", "get", lic.GetId())...)
	require.Regexp(t, `GRANT\s+FEATURE\s+VERSION\s+IN USE\s+SEATS\s+STARTS\s+EXPIRES`, table)
	require.Regexp(t, r2024.GetId()+`\s+render\s+2024\s+1\s+1\s+-\s`, table)
	require.Regexp(t, r2025.GetId()+`\s+render\s+2025\s+0\s+2 \+1\s+-\s+\S+ \S+\s+3d \(1 seat\)\s+yes`, table)
	require.Regexp(t, sim.GetId()+`\s+sim\s+all\s+1\s+1\s`, table)
	require.Regexp(t, lic.GetId()+`\s+ACME CAD\s.*\srender, sim\n`, c.ok(tc("licenses", "ls")...))
	var grantsView struct{ Grants []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(c.ok(tc("grants", "ls", lic.GetId(), "-o", "json")...)), &grantsView))
	require.Len(t, grantsView.Grants, 3)

	// ---- status: the lmstat -a view ----
	table = c.ok(tc("status")...)
	require.Regexp(t, `\n`+lic.GetId()+`\s+ACME CAD\s+1\s+-\s+0\s+2\s+0\s+1h\s`, table, "the base pool: ws-cat")
	require.Regexp(t, `\n  `+r2024.GetId()+`\s+render 2024\s+1\s+-\s+0\s+1\s+-\s+-\s+\S+ \S+\s+yes\n`, table)
	require.Regexp(t, `\n  `+r2025.GetId()+`\s+render 2025\s+0\s+-\s+0\s+2 \+1\s`, table)
	require.Regexp(t, `\n  `+sim.GetId()+`\s+sim \(all versions\)\s+1\s+-\s+0\s+1\s+-\s+-\s+-\s+yes\n`, table)
	var view struct{ Licenses []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(c.ok(tc("status", "-o", "json")...)), &view))
	require.Len(t, view.Licenses, 1)
	var statusLic seatdv1.License
	require.NoError(t, protojson.Unmarshal(view.Licenses[0], &statusLic))
	requireProtoEqual(t, one(gl.GetLicense()), one(&statusLic), "status -o json vs GetLicense")

	// ---- leases --feature ----
	var leases seatdv1.ListLeasesResponse
	c.json(&leases, tc("leases", "ls", lic.GetId(), "--feature", "render")...)
	require.Len(t, leases.GetLeases(), 1)
	require.Equal(t, render.GetLease().GetId(), leases.GetLeases()[0].GetId())
	c.json(&leases, tc("leases", "ls", lic.GetId())...)
	require.Len(t, leases.GetLeases(), 3, "the base pool's and every grant's")
	table = c.ok(tc("leases", "ls", lic.GetId())...)
	require.Regexp(t, render.GetLease().GetId()+`\s+active\s+no\s+ws-ann\s+host-ws-ann\s+ws-ann\s+render\s+2023\.4\s`, table)
	require.Regexp(t, `\s+ws-cat\s+host-ws-cat\s+ws-cat\s+-\s+-\s`, table)

	// ---- update: only the flags given ----
	var upd seatdv1.FeatureGrant
	c.json(&upd, tc("grants", "update", lic.GetId(), r2024.GetId(), "--seats", "3")...)
	require.EqualValues(t, 3, upd.GetSeats())
	require.Equal(t, "2024", upd.GetVersion(), "fields not named stay")
	require.Equal(t, soon, upd.GetExpiresAt().AsTime(), "fields not named stay")
	short := r2024.GetId()[strings.LastIndexByte(r2024.GetId(), '.')+1:]
	c.json(&upd, tc("grants", "update", lic.GetId(), short, "--expires-at", "never")...)
	require.Nil(t, upd.GetExpiresAt())
	require.EqualValues(t, 3, upd.GetSeats())
	c.fails(ctlUsage, tc("grants", "update", lic.GetId(), short)...)
	c.fails(ctlNotFound, tc("grants", "update", lic.GetId(), "00000000", "--seats", "1")...)

	// ---- the usage report and the export by feature ----
	_, err = p.seats().ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: render.GetLease().GetId(), LeaseToken: render.GetLeaseToken()})
	require.NoError(t, err)
	var ur seatdv1.GetUsageReportResponse
	c.json(&ur, tc("report", "usage", "--since", "1d", "--feature", "render")...)
	require.NotEmpty(t, ur.GetRows())
	for _, r := range ur.GetRows() {
		require.Equal(t, "render", r.GetFeature())
	}
	require.Regexp(t, lic.GetId()+`\s+render\s`, c.ok(tc("report", "usage", "--since", "1d")...))
	rows := csvRows(t, c.ok(tc("export", "usage", "--since", "1d", "--feature", "render")...))
	require.Len(t, rows, 2, "ann's render lease, released")
	require.Equal(t, []string{render.GetLease().GetId(), lic.GetId(), "released"}, rows[1][:3])
	require.Equal(t, []string{r2024.GetId(), "render"}, rows[1][6:])
	require.Len(t, csvRows(t, c.ok(tc("export", "usage", "--since", "1d", "--feature", "sim")...)), 1, "sim's lease is live")

	// ---- delete ----
	var del seatdv1.DeleteFeatureGrantResponse
	c.json(&del, tc("grants", "delete", lic.GetId(), sim.GetId())...)
	require.EqualValues(t, 1, del.GetRevokedLeases(), "ws-bob held sim")
	c.fails(ctlNotFound, tc("grants", "delete", lic.GetId(), sim.GetId())...)
	require.NotContains(t, c.ok(tc("grants", "ls", lic.GetId())...), sim.GetId())
}
