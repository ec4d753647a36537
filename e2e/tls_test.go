package e2e

import (
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/testcerts"
)

// TestTLSWithClientCertificatesAndRotation: seatd serves gRPC and REST over
// TLS, refuses clients without a certificate from the client CA (mTLS),
// and picks up a replaced certificate at the next handshake while an open
// heartbeat stream carries on.
func TestTLSWithClientCertificatesAndRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "clients.crt")
	serverCA, clientCA := testcerts.NewCA(t, "server CA"), testcerts.NewCA(t, "client CA")
	first := serverCA.Server(t)
	first.Install(t, certFile, keyFile)
	testcerts.WriteAtomically(t, caFile, clientCA.PEM)
	p := start(t, options{args: []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", caFile}})

	withCert := &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{clientCA.Client(t, "app").TLS(t)}}
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(withCert)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx := testContext(t)
	admin := seatdv1.NewAdminServiceClient(conn)
	lic, err := admin.CreateLicense(bearer(ctx, p.OperatorKey), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "tls", Seats: 1, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	acq, err := seatdv1.NewSeatServiceClient(conn).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetLicense().GetKey(), Fingerprint: "tls"})
	require.NoError(t, err)
	stream, err := seatdv1.NewHeartbeatServiceClient(conn).HeartbeatStream(ctx)
	require.NoError(t, err)
	ping := &seatdv1.HeartbeatStreamRequest{LeaseId: acq.GetLease().GetId(), LeaseToken: acq.GetLeaseToken()}
	require.NoError(t, stream.Send(ping))
	_, err = stream.Recv()
	require.NoError(t, err)

	// REST over TLS with the client certificate.
	rest := &http.Client{Transport: &http.Transport{TLSClientConfig: withCert}, Timeout: 30 * time.Second}
	req, err := http.NewRequestWithContext(ctx, "GET", "https://"+p.HTTPAddr+"/v1/admin/licenses", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+p.OperatorKey)
	resp, err := rest.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// seatd backup over mTLS, with the private CA.
	app := clientCA.Client(t, "backup")
	appCert, appKey, caPEM := filepath.Join(dir, "app.crt"), filepath.Join(dir, "app.key"), filepath.Join(dir, "server-ca.crt")
	app.Install(t, appCert, appKey)
	testcerts.WriteAtomically(t, caPEM, serverCA.PEM)
	backup := filepath.Join(dir, "backup.db")
	code, out := runToExit(t, failTimeout, []string{"backup", "--addr", "https://" + p.HTTPAddr, "--operator-key", p.OperatorKey,
		"--cacert", caPEM, "--cert", appCert, "--key", appKey, backup}, nil)
	require.Zero(t, code, out)
	require.FileExists(t, backup)
	code, out = runToExit(t, failTimeout, []string{"backup", "--addr", "https://" + p.HTTPAddr, "--operator-key", p.OperatorKey,
		"--cacert", caPEM, filepath.Join(dir, "refused.db")}, nil)
	require.NotZero(t, code, "a backup without the client certificate: %s", out)

	// Without a client certificate: refused on both ports.
	noCert := &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost"}
	bare, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(noCert)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Close() })
	_, err = seatdv1.NewSeatServiceClient(bare).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetLicense().GetKey(), Fingerprint: "x"})
	require.Error(t, err, "a gRPC client without a certificate")
	_, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: noCert}, Timeout: 30 * time.Second}).Get("https://" + p.HTTPAddr + "/healthz")
	require.Error(t, err, "a REST client without a certificate")
	// Plaintext to a TLS port: refused.
	plain, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	_, err = seatdv1.NewSeatServiceClient(plain).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetLicense().GetKey(), Fingerprint: "x"})
	require.Error(t, err, "plaintext gRPC")

	// Rotation: a new certificate replaces the files; the next handshake
	// presents it, with no restart.
	second := serverCA.Server(t)
	second.Install(t, certFile, keyFile)
	for _, addr := range []string{p.GRPCAddr, p.HTTPAddr} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, withCert)
		require.NoError(t, err)
		require.Equal(t, second.Serial, c.ConnectionState().PeerCertificates[0].SerialNumber, "the new certificate on %s", addr)
		c.Close()
	}
	// The stream opened before the rotation carries on.
	require.NoError(t, stream.Send(ping))
	_, err = stream.Recv()
	require.NoError(t, err, "an open stream survives the rotation")
	require.True(t, p.running())
}

// TestPlaintextOnTheNetworkWarns: without TLS, a listener reachable from
// other machines is logged as a warning naming the flag.
func TestPlaintextOnTheNetworkWarns(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{"--grpc-addr", "0.0.0.0:0"}})
	out := p.Output()
	require.Contains(t, out, "serving plaintext on a non-loopback address")
	require.Contains(t, out, "flag=--grpc-addr")
	require.NotContains(t, out, "flag=--http-addr", "the HTTP port is on loopback")
}

// TestGeneratedKeyIsShownOnlyOnceServing: a start that fails after the
// key is generated (a busy port) neither shows nor keeps it.
func TestGeneratedKeyIsShownOnlyOnceServing(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	dir := t.TempDir()
	code, out := runToExit(t, failTimeout, []string{
		"--grpc-addr", "127.0.0.1:0", "--http-addr", busy.Addr().String(), "--data-dir", dir, "--drain-delay", "0s",
	}, nil)
	require.NotZero(t, code)
	require.Contains(t, out, "--http-addr")
	require.NotContains(t, out, "generated an operator key")
	require.NoFileExists(t, filepath.Join(dir, "operator.key"))
	require.False(t, strings.Contains(out, "sop_"), "no key in the output")
}
