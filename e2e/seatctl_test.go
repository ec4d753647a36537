package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"sigs.k8s.io/yaml"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/testcerts"
)

// seatctl's documented exit codes (client/seatctl/errors.go).
const (
	ctlUsage       = 2
	ctlNotFound    = 3
	ctlPermission  = 4
	ctlUnavailable = 5
	ctlRefused     = 6
)

// buildSeatctl builds bin/seatctl for a test (with -race when the tests
// have it), or uses SEATCTL_BIN.
func buildSeatctl(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SEATCTL_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		return abs
	}
	out := filepath.Join(t.TempDir(), "seatctl")
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, "github.com/seatd/seatd/client/cmd/seatctl")...)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "build seatctl: %s", msg)
	return out
}

// ctl runs seatctl against one seatd: SEATCTL_ADDR and SEATCTL_KEY in its
// environment (and no other SEATCTL_ variable of ours).
type ctl struct {
	t    *testing.T
	bin  string
	addr string
	key  string
}

type ctlResult struct {
	Out, Err string
	Code     int
}

func (c ctl) run(args ...string) ctlResult {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if c.addr != "" {
		cmd.Env = append(cmd.Env, "SEATCTL_ADDR="+c.addr)
	}
	if c.key != "" {
		cmd.Env = append(cmd.Env, "SEATCTL_KEY="+c.key)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		c.t.Fatalf("seatctl %v: %v", args, err)
	}
	r := ctlResult{Out: out.String(), Err: errb.String(), Code: cmd.ProcessState.ExitCode()}
	require.NotContains(c.t, r.Err, "DATA RACE")
	require.NotContains(c.t, r.Err, "goroutine ", "seatctl %v printed a stack", args)
	return r
}

// ok runs seatctl, requires exit 0 and returns stdout.
func (c ctl) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, 0, r.Code, "seatctl %v: stderr %s", args, r.Err)
	return r.Out
}

// fails runs seatctl and requires the exit code and a one-line message.
func (c ctl) fails(code int, args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, code, r.Code, "seatctl %v: stdout %s stderr %s", args, r.Out, r.Err)
	msg := strings.TrimSuffix(r.Err, "\n")
	require.True(c.t, strings.HasPrefix(msg, "seatctl: ") && !strings.Contains(msg, "\n"),
		"seatctl %v: want one line \"seatctl: …\", got %q", args, r.Err)
	return msg
}

// json runs seatctl with -o json and decodes its output into m.
func (c ctl) json(m proto.Message, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	require.NoError(c.t, protojson.Unmarshal([]byte(out), m), "seatctl %v -o json: %s", args, out)
}

// yaml runs seatctl with -o yaml and decodes its output into m.
func (c ctl) yaml(m proto.Message, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "yaml")...)
	j, err := yaml.YAMLToJSON([]byte(out))
	require.NoError(c.t, err, "seatctl %v -o yaml: %s", args, out)
	require.NoError(c.t, protojson.Unmarshal(j, m), "seatctl %v -o yaml: %s", args, out)
}

// requireProtoEqual requires want and got (messages, or slices of them) to
// be equal message by message.
func requireProtoEqual[M proto.Message](t *testing.T, want, got []M, msg string) {
	t.Helper()
	show := func(ms []M) string {
		var b strings.Builder
		for _, m := range ms {
			b.WriteString(protojson.Format(m) + "\n")
		}
		return b.String()
	}
	equal := len(want) == len(got)
	for i := 0; equal && i < len(want); i++ {
		equal = proto.Equal(want[i], got[i])
	}
	if !equal {
		t.Fatalf("%s:\nwant:\n%s\ngot:\n%s", msg, show(want), show(got))
	}
}

// one is a message as a slice of one, for requireProtoEqual.
func one[M proto.Message](m M) []M { return []M{m} }

// TestSeatctl runs every seatctl command against a real seatd, embedded and
// distributed, and over TLS.
func TestSeatctl(t *testing.T) {
	t.Parallel()
	bin := buildSeatctl(t)
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testSeatctl(t, bin, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testSeatctl(t, bin, b.startSeatd(t, "ctl-"+randomHex(3)))
	})
	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.pem")
		ca := testcerts.NewCA(t, "seatctl CA")
		ca.Server(t).Install(t, certFile, keyFile)
		testcerts.WriteAtomically(t, caFile, ca.PEM)
		p := start(t, options{args: []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile}})
		c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: p.OperatorKey}
		require.Contains(t, c.ok("--tls-ca", caFile, "status"), "leader")
		// Without TLS the TLS port does not answer a plaintext client.
		c.fails(ctlUnavailable, "--timeout", "5s", "status")
		// A CA that did not sign the server's certificate.
		other := filepath.Join(dir, "other.pem")
		testcerts.WriteAtomically(t, other, testcerts.NewCA(t, "other").PEM)
		c.fails(ctlUnavailable, "--timeout", "5s", "--tls-ca", other, "status")
	})
}

func testSeatctl(t *testing.T, bin string, p *proc) {
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	c := ctl{t: t, bin: bin, addr: p.GRPCAddr, key: p.OperatorKey}

	// ---- tenants ----
	tenantID := "acme-" + randomHex(3)
	var tenant seatdv1.Tenant
	c.json(&tenant, "tenants", "create", "--id", tenantID, "--name", "Acme")
	require.Equal(t, tenantID, tenant.GetId())
	var tenants seatdv1.ListTenantsResponse
	c.json(&tenants, "tenants", "ls")
	wantTenants, err := admin.ListTenants(op, &seatdv1.ListTenantsRequest{})
	require.NoError(t, err)
	requireProtoEqual(t, wantTenants.GetTenants(), tenants.GetTenants(), "tenants ls -o json vs ListTenants")
	require.Contains(t, c.ok("tenants", "ls"), tenantID)
	c.fails(ctlRefused, "tenants", "create", "--id", tenantID, "--name", "again")

	// ---- apikeys ----
	var created seatdv1.CreateApiKeyResponse
	c.json(&created, "apikeys", "create", tenantID, "--name", "ci")
	require.NotEmpty(t, created.GetSecret())
	var keys seatdv1.ListApiKeysResponse
	c.yaml(&keys, "apikeys", "ls", tenantID)
	requireProtoEqual(t, []*seatdv1.ApiKey{created.GetApiKey()}, keys.GetApiKeys(), "apikeys ls -o yaml vs the created key")
	table := c.ok("apikeys", "ls", tenantID)
	require.Contains(t, table, created.GetApiKey().GetId())

	// The API key, from --key-file, works in its own tenant only.
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte(created.GetSecret()+"\n"), 0o600))
	tc := ctl{t: t, bin: bin, addr: p.GRPCAddr} // no SEATCTL_KEY
	var acmeLic seatdv1.License
	tc.json(&acmeLic, "--key-file", keyFile, "licenses", "create", "--name", "Acme tool", "--seats", "1")
	require.Equal(t, tenantID, acmeLic.GetTenantId())
	statusOut := tc.ok("--key-file", keyFile, "status")
	require.Contains(t, statusOut, acmeLic.GetId())
	require.Contains(t, statusOut, "cleanup: not shown (operator key only)")
	tc.fails(ctlPermission, "--key-file", keyFile, "cleanup", "status")
	tc.fails(ctlPermission, "--key-file", keyFile, "tenants", "ls")
	// The operator sees it in that tenant only.
	c.fails(ctlNotFound, "licenses", "get", acmeLic.GetId())
	var got seatdv1.License
	c.json(&got, "--tenant", tenantID, "licenses", "get", acmeLic.GetId())
	requireProtoEqual(t, one(&acmeLic), one(&got), "licenses get --tenant")
	var revoked seatdv1.ApiKey
	c.json(&revoked, "apikeys", "revoke", created.GetApiKey().GetId())
	require.NotNil(t, revoked.GetRevokeTime())
	tc.fails(ctlPermission, "--key-file", keyFile, "licenses", "ls")
	c.fails(ctlNotFound, "apikeys", "revoke", "ak_nosuchkey")

	// ---- licenses ----
	// An hour's TTL: laptop-2's lease below must stay alive through dozens
	// of seatctl runs, which took more than a minute on a loaded machine.
	var lic seatdv1.License
	c.json(&lic, "licenses", "create", "--name", "ACME CAD", "--seats", "2", "--overdraft", "1",
		"--ttl", "1h", "--metadata", "plan=pro", "--strategy", "fingerprint", "--expires-at", "2099-01-02")
	require.Equal(t, int32(2), lic.GetSeats())
	require.Equal(t, time.Hour, lic.GetLeaseTtl().AsDuration())
	require.Equal(t, "pro", lic.GetMetadata()["plan"])
	require.True(t, lic.GetActive())
	gl, err := admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	requireProtoEqual(t, one(gl.GetLicense()), one(&lic), "licenses create -o json vs GetLicense")
	c.json(&got, "licenses", "get", lic.GetId())
	requireProtoEqual(t, one(gl.GetLicense()), one(&got), "licenses get -o json vs GetLicense")
	c.yaml(&got, "licenses", "get", lic.GetId())
	requireProtoEqual(t, one(gl.GetLicense()), one(&got), "licenses get -o yaml vs GetLicense")
	table = c.ok("licenses", "get", lic.GetId())
	require.Contains(t, table, lic.GetKey())
	require.Contains(t, table, "2099-01-02")

	var lics seatdv1.ListLicensesResponse
	c.json(&lics, "licenses", "ls")
	wantLics, err := admin.ListLicenses(op, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	requireProtoEqual(t, wantLics.GetLicenses(), lics.GetLicenses(), "licenses ls -o json vs ListLicenses")
	require.Contains(t, c.ok("licenses", "ls"), "ACME CAD")

	var upd seatdv1.License
	c.json(&upd, "licenses", "update", lic.GetId(), "--seats", "3", "--active=false", "--name", "ACME CAD 2")
	require.Equal(t, int32(3), upd.GetSeats())
	require.False(t, upd.GetActive())
	require.Equal(t, "ACME CAD 2", upd.GetName())
	require.Equal(t, "pro", upd.GetMetadata()["plan"], "fields not named stay")
	gl, err = admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	requireProtoEqual(t, one(gl.GetLicense()), one(&upd), "licenses update -o json vs GetLicense")
	require.Contains(t, c.ok("licenses", "update", lic.GetId(), "--active", "--expires-at", "never"), "ACME CAD 2")
	gl, err = admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.True(t, gl.GetLicense().GetActive())
	require.Nil(t, gl.GetLicense().GetExpiresAt())
	c.fails(ctlUsage, "licenses", "update", lic.GetId())
	c.fails(ctlUsage, "licenses", "update", lic.GetId(), "--seats", "0")
	require.Regexp(t, `STRATEGY\s+MAX BORROW\s+EXPIRES`, c.ok("licenses", "ls"))
	require.Regexp(t, lic.GetId()+`\s+ACME CAD 2\s+.*\sfingerprint\s+off\s`, c.ok("licenses", "ls"), "no borrowing by default")
	c.fails(ctlUsage, "licenses", "create", "--seats", "1", "--strategy", "nobody")
	c.fails(ctlNotFound, "licenses", "update", "lic_nosuchlicense", "--seats", "4")

	// ---- leases ----
	var leaseIDs []string
	for _, fp := range []string{"laptop-1", "laptop-2"} {
		r, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: fp, User: "ann", Hostname: "host-" + fp})
		require.NoError(t, err)
		leaseIDs = append(leaseIDs, r.GetLease().GetId())
	}
	var leases seatdv1.ListLeasesResponse
	c.json(&leases, "leases", "ls", lic.GetId())
	wantLeases, err := admin.ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	requireProtoEqual(t, wantLeases.GetLeases(), leases.GetLeases(), "leases ls -o json vs ListLeases")
	table = c.ok("leases", "ls", lic.GetId(), "--state", "active")
	for _, want := range []string{"laptop-1", "laptop-2", "host-laptop-1", "ann", "active", "in "} {
		require.Contains(t, table, want)
	}
	require.Regexp(t, `ID\s+STATE\s+BORROWED\s+USER\s+HOST\s+FINGERPRINT\s`, table)
	require.Regexp(t, leaseIDs[1]+`\s+active\s+no\s+ann\s+host-laptop-2\s`, table)
	var rl seatdv1.Lease
	c.json(&rl, "leases", "revoke", leaseIDs[0], "--reason", "seatctl test")
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_REVOKED, rl.GetState())
	c.json(&leases, "leases", "ls", lic.GetId(), "--state", "revoked")
	require.Len(t, leases.GetLeases(), 1)
	require.Equal(t, leaseIDs[0], leases.GetLeases()[0].GetId())
	require.Contains(t, c.ok("leases", "ls", lic.GetId()), "revoked")
	c.fails(ctlUsage, "leases", "ls", lic.GetId(), "--state", "sleeping")
	c.fails(ctlNotFound, "leases", "revoke", "lse_nosuchlease")
	// Revoking again is refused, saying so: nothing changed.
	require.Contains(t, c.fails(ctlRefused, "leases", "revoke", leaseIDs[0]), "already revoked")
	c.fails(ctlNotFound, "leases", "ls", "lic_nosuchlicense")

	// ---- borrowing: shown in licenses and leases; a borrowed lease cannot be revoked ----
	var blic seatdv1.License
	c.json(&blic, "licenses", "create", "--name", "Borrowable", "--seats", "2", "--max-borrow", "72h", "--max-borrowed-seats", "1")
	require.Equal(t, 72*time.Hour, blic.GetMaxBorrowDuration().AsDuration())
	require.EqualValues(t, 1, blic.GetMaxBorrowedSeats())
	require.Regexp(t, `max borrow\s+3d \(1 seat\)`, c.ok("licenses", "get", blic.GetId()))
	require.Regexp(t, blic.GetId()+`\s+Borrowable\s+.*\s3d \(1 seat\)\s`, c.ok("licenses", "ls"))
	c.json(&blic, "licenses", "update", blic.GetId(), "--max-borrowed-seats", "2")
	require.EqualValues(t, 2, blic.GetMaxBorrowedSeats())
	require.Equal(t, 72*time.Hour, blic.GetMaxBorrowDuration().AsDuration(), "fields not named stay")
	br, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: blic.GetKey(), Fingerprint: "travel-laptop", User: "bob",
		BorrowDuration: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	require.True(t, br.GetLease().GetBorrowed())
	table = c.ok("leases", "ls", blic.GetId())
	require.Regexp(t, br.GetLease().GetId()+`\s+active\s+yes\s+bob\s`, table)
	require.Contains(t, c.fails(ctlRefused, "leases", "revoke", br.GetLease().GetId()), "LEASE_BORROWED")
	c.json(&leases, "leases", "ls", blic.GetId(), "--state", "active")
	require.Len(t, leases.GetLeases(), 1, "the borrowed lease keeps its seat")
	require.True(t, leases.GetLeases()[0].GetBorrowed())

	// ---- signing keys and the JWKS (a tenant of its own, so that the rotation disturbs nobody) ----
	var sks seatdv1.ListSigningKeysResponse
	c.json(&sks, "--tenant", tenantID, "signing-keys", "ls")
	wantSks, err := admin.ListSigningKeys(op, &seatdv1.ListSigningKeysRequest{TenantId: tenantID})
	require.NoError(t, err)
	requireProtoEqual(t, wantSks.GetSigningKeys(), sks.GetSigningKeys(), "signing-keys ls -o json vs ListSigningKeys")
	require.Len(t, sks.GetSigningKeys(), 2, "a tenant gets its first key and its next key with it")
	nextKid, oldKid := sks.GetSigningKeys()[0].GetKid(), sks.GetSigningKeys()[1].GetKid()
	table = c.ok("--tenant", tenantID, "signing-keys", "ls")
	require.Regexp(t, `KID\s+STATE\s+CREATED\s+RETIRED\s+PUBLISHED UNTIL`, table)
	require.Regexp(t, nextKid+`\s+next\s`, table)
	require.Regexp(t, oldKid+`\s+signing\s`, table)
	// seatctl jwks needs no key, and prints what the REST route serves.
	noKeyCtl := ctl{t: t, bin: bin, addr: p.GRPCAddr}
	jwksOut := noKeyCtl.ok("--tenant", tenantID, "jwks")
	require.JSONEq(t, string(restJWKS(t, p, tenantID)), jwksOut)
	require.Contains(t, jwksOut, oldKid)
	require.Contains(t, jwksOut, nextKid, "the next key is published ahead of use")
	require.NotContains(t, noKeyCtl.ok("jwks"), oldKid, "the default tenant has keys of its own")
	var rotated seatdv1.SigningKey
	c.json(&rotated, "--tenant", tenantID, "signing-keys", "rotate")
	require.Equal(t, nextKid, rotated.GetKid(), "the next key signs now")
	require.Nil(t, rotated.GetRetireTime())
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_SIGNING, rotated.GetState())
	c.json(&sks, "--tenant", tenantID, "signing-keys", "ls")
	require.Len(t, sks.GetSigningKeys(), 3)
	newNextKid := sks.GetSigningKeys()[0].GetKid()
	table = c.ok("--tenant", tenantID, "signing-keys", "ls")
	require.Regexp(t, newNextKid+`\s+next\s`, table)
	require.Regexp(t, rotated.GetKid()+`\s+signing\s`, table)
	require.Regexp(t, oldKid+`\s+retired\s`, table)
	eventually(t, eventTimeout, "the new next key in seatctl jwks", func() bool {
		out := noKeyCtl.ok("--tenant", tenantID, "jwks")
		return strings.Contains(out, newNextKid) && strings.Contains(out, rotated.GetKid()) && strings.Contains(out, oldKid)
	})
	tc.fails(ctlPermission, "--key-file", keyFile, "signing-keys", "rotate") // the revoked API key

	// ---- status ----
	table = c.ok("status")
	for _, want := range []string{lic.GetId(), "ACME CAD 2", "3 +1", "WAITING", "1h", "leader", "last pass"} {
		require.Contains(t, table, want)
	}
	var view struct {
		Licenses []json.RawMessage `json:"licenses"`
		Cleanup  json.RawMessage   `json:"cleanup"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("status", "-o", "json")), &view))
	var statusLics []*seatdv1.License
	for _, raw := range view.Licenses {
		l := &seatdv1.License{}
		require.NoError(t, protojson.Unmarshal(raw, l))
		statusLics = append(statusLics, l)
	}
	wantLics, err = admin.ListLicenses(op, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	requireProtoEqual(t, wantLics.GetLicenses(), statusLics, "status -o json licenses vs ListLicenses")
	inUse := map[string]int32{}
	for _, l := range statusLics {
		inUse[l.GetId()] = l.GetSeatsInUse()
	}
	require.Equal(t, int32(1), inUse[lic.GetId()], "status: laptop-2's seat is in use, laptop-1's was revoked")
	require.Regexp(t, lic.GetId()+`\s+ACME CAD 2\s+1\s+-\s+0\s+3 \+1\s+0\s+1h\s`, table)
	var st seatdv1.GetCleanupStatusResponse
	require.NoError(t, protojson.Unmarshal(view.Cleanup, &st))
	require.NotEmpty(t, st.GetInstanceId())

	// ---- a zombie, cleanup, the zombie report ----
	var zlic seatdv1.License
	c.json(&zlic, "licenses", "create", "--name", "Zombie maker", "--seats", "1", "--ttl", "1s")
	_, err = p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: zlic.GetKey(), Fingerprint: "crashes"})
	require.NoError(t, err)
	eventually(t, eventTimeout, "the lease to pass its deadline", func() bool {
		r, err := admin.ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: zlic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_EXPIRED})
		return err == nil && len(r.GetLeases()) == 1
	})
	var run seatdv1.CleanupResponse
	c.json(&run, "cleanup", "run")
	require.Equal(t, "manual", run.GetRun().GetTrigger())
	require.Contains(t, c.ok("cleanup", "run"), "(manual)")
	c.json(&st, "cleanup", "status")
	require.NotEmpty(t, st.GetInstanceId())
	require.Contains(t, c.ok("cleanup", "status"), "last pass")

	var zr seatdv1.GetZombieReportResponse
	c.json(&zr, "report", "zombies", "--since", "1d")
	require.EqualValues(t, 1, zr.GetZombiesTotal())
	require.Len(t, zr.GetTopLicenses(), 1)
	require.Equal(t, zlic.GetId(), zr.GetTopLicenses()[0].GetLicenseId())
	table = c.ok("report", "zombies", "--since", "30d", "--top", "5")
	require.Contains(t, table, zlic.GetId())
	require.Contains(t, table, "1 cleaned")
	c.json(&zr, "report", "zombies", "--since", "2000-01-01", "--until", "2000-01-02")
	require.Zero(t, zr.GetZombiesTotal())
	c.fails(ctlUsage, "report", "zombies", "--since", "yesterday")

	// ---- the usage report: the zombie maker held one seat, acquired once ----
	var ur seatdv1.GetUsageReportResponse
	c.json(&ur, "report", "usage", "--license", zlic.GetId(), "--since", "1d", "--by", "hour")
	require.Equal(t, seatdv1.UsageBucket_USAGE_BUCKET_HOUR, ur.GetBucket())
	require.NotEmpty(t, ur.GetRows())
	var (
		peak     int32
		acquired int64
	)
	for _, r := range ur.GetRows() {
		require.Equal(t, zlic.GetId(), r.GetLicenseId())
		peak, acquired = max(peak, r.GetPeakSeats()), acquired+r.GetAcquisitions()
	}
	require.EqualValues(t, 1, peak, "one seat held at most")
	require.EqualValues(t, 1, acquired, "one acquisition")
	require.Len(t, ur.GetUsers(), 1)
	require.Equal(t, "crashes", ur.GetUsers()[0].GetUser(), "a lease without a user counts by its fingerprint")
	table = c.ok("report", "usage", "--since", "30d")
	require.Contains(t, table, "PEAK")
	require.Contains(t, table, zlic.GetId())
	c.fails(ctlUsage, "report", "usage", "--by", "week")

	// ---- delete ----
	var del seatdv1.DeleteLicenseResponse
	c.json(&del, "licenses", "delete", lic.GetId())
	require.EqualValues(t, 1, del.GetRevokedLeases(), "laptop-2 was live")
	c.fails(ctlNotFound, "licenses", "get", lic.GetId())
	c.fails(ctlNotFound, "licenses", "delete", lic.GetId())

	// ---- export: every page, CSV and JSON lines, compared with the API ----
	testSeatctlExport(t, p, c, zlic.GetId())

	// ---- exit codes of the connection, key and command line ----
	require.Contains(t, c.fails(ctlPermission, "--key", "wrong-key-0123456789", "status"), "Unauthenticated")
	noKey := ctl{t: t, bin: bin, addr: p.GRPCAddr}
	require.Contains(t, noKey.fails(ctlPermission, "status"), "no key")
	unreachable := ctl{t: t, bin: bin, key: p.OperatorKey}
	require.Contains(t, unreachable.fails(ctlUnavailable, "--addr", freeAddr(t), "--timeout", "5s", "status"), "cannot reach seatd")
	c.fails(ctlUsage, "licenses", "frobnicate")
	c.fails(ctlUsage, "licenses", "get")
	c.fails(ctlUsage, "status", "-o", "xml")
	c.fails(ctlUsage, "status", "--no-such-flag")
	c.fails(ctlUsage, "--key-file", filepath.Join(t.TempDir(), "missing"), "status")

	// ---- completion ----
	for _, shell := range []string{"bash", "zsh", "fish"} {
		require.Contains(t, c.ok("completion", shell), "seatctl", shell)
	}
	// Completion of license ids asks seatd.
	require.Contains(t, c.ok("__complete", "licenses", "get", ""), zlic.GetId())
}

// jsonLines decodes seatctl's --format jsonl output, one M per line.
func jsonLines[M proto.Message](t *testing.T, out string, fresh func() M) []M {
	t.Helper()
	var ms []M
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := fresh()
		require.NoError(t, protojson.Unmarshal([]byte(line), m), "line %q", line)
		ms = append(ms, m)
	}
	return ms
}

func csvRows(t *testing.T, out string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err, "CSV: %s", out)
	require.NotEmpty(t, rows, "no header")
	return rows
}

func testSeatctlExport(t *testing.T, p *proc, c ctl, zombieLicense string) {
	op := p.asOperator(testContext(t))
	admin := p.admin()

	// usage: revoked laptop-1, the deleted license's laptop-2, the zombie.
	usage, err := admin.ListUsageEvents(op, &seatdv1.ListUsageEventsRequest{PageSize: 1000})
	require.NoError(t, err)
	require.Len(t, usage.GetUsageEvents(), 3)
	got := jsonLines(t, c.ok("export", "usage", "--since", "1d", "--format", "jsonl", "--page-size", "2"), func() *seatdv1.UsageEvent { return &seatdv1.UsageEvent{} })
	requireProtoEqual(t, usage.GetUsageEvents(), got, "export usage --format jsonl (pages of 2) vs ListUsageEvents")
	rows := csvRows(t, c.ok("export", "usage", "--since", "1d", "--license", zombieLicense))
	require.Equal(t, []string{"lease_id", "license_id", "end_state", "started_at", "ended_at", "duration_seconds", "grant_id", "feature"}, rows[0])
	require.Len(t, rows, 2)
	require.Equal(t, zombieLicense, rows[1][1])
	require.Equal(t, "expired", rows[1][2])
	require.Len(t, csvRows(t, c.ok("export", "usage", "--since", "2000-01-01", "--until", "2000-01-02")), 1, "header only")

	// cleanup: the zombie.
	cleanups, err := admin.ListCleanupEvents(op, &seatdv1.ListCleanupEventsRequest{PageSize: 1000})
	require.NoError(t, err)
	require.Len(t, cleanups.GetCleanupEvents(), 1)
	gotC := jsonLines(t, c.ok("export", "cleanup", "--format", "jsonl"), func() *seatdv1.CleanupEvent { return &seatdv1.CleanupEvent{} })
	requireProtoEqual(t, cleanups.GetCleanupEvents(), gotC, "export cleanup --format jsonl vs ListCleanupEvents")
	rows = csvRows(t, c.ok("export", "cleanup", "--license", zombieLicense))
	require.Len(t, rows, 2)
	require.Equal(t, "zombie", rows[1][2])

	// audit: every page of small pages, the same as the API's.
	var audit []*seatdv1.AuditEvent
	req := &seatdv1.ListAuditEventsRequest{PageSize: 1000}
	for {
		r, err := admin.ListAuditEvents(op, req)
		require.NoError(t, err)
		audit = append(audit, r.GetAuditEvents()...)
		if req.PageToken = r.GetNextPageToken(); req.PageToken == "" {
			break
		}
	}
	require.Greater(t, len(audit), 5)
	gotA := jsonLines(t, c.ok("export", "audit", "--format", "jsonl", "--page-size", "3"), func() *seatdv1.AuditEvent { return &seatdv1.AuditEvent{} })
	requireProtoEqual(t, audit, gotA, "export audit --format jsonl (pages of 3) vs ListAuditEvents")
	rows = csvRows(t, c.ok("export", "audit", "--page-size", "3"))
	require.Len(t, rows, len(audit)+1)
	var actions []string
	for _, r := range rows[1:] {
		actions = append(actions, r[3])
	}
	require.Contains(t, actions, "license.create")
	require.Contains(t, actions, "lease.revoke")

	c.fails(ctlUsage, "export", "audit", "--license", zombieLicense)
	c.fails(ctlUsage, "export", "events")
	c.fails(ctlUsage, "export", "usage", "--format", "xml")
	c.fails(ctlUsage, "export", "usage", "--since", "2001-01-02", "--until", "2001-01-01")
}
