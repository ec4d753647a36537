package tlsreload

import (
	"crypto/tls"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
	"github.com/seatd/seatd/internal/testcerts"
)

type files struct{ dir, cert, key, ca string }

func newFiles(t *testing.T) files {
	dir := t.TempDir()
	return files{dir, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
}

// handshake connects a TLS client to a server using cfg and returns the
// serial of the certificate the server presented, or the handshake error.
func handshake(t *testing.T, cfg *tls.Config, client *tls.Config) (*big.Int, error) {
	t.Helper()
	a, b := net.Pipe()
	defer b.Close()
	srvErr := make(chan error, 1)
	go func() {
		srvErr <- tls.Server(a, cfg).Handshake()
		a.Close()
	}()
	c := tls.Client(b, client)
	err := c.Handshake()
	if err == nil {
		// TLS 1.3: the server judges the client's certificate after the
		// client is done; read until it answers (an alert) or hangs up.
		_, _ = c.Read(make([]byte, 1))
	} else {
		b.Close()
	}
	if serr := <-srvErr; err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

func TestReplacedCertificateServesTheNextHandshake(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	ca := testcerts.NewCA(t, "test CA")
	first := ca.Server(t)
	first.Install(t, f.cert, f.key)
	r, err := New(Files{Cert: f.cert, Key: f.key}, nil)
	require.NoError(t, err)
	cfg := r.Config("h2")
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{"h2"}}

	got, err := handshake(t, cfg, client)
	require.NoError(t, err)
	require.Equal(t, first.Serial, got)

	second := ca.Server(t)
	second.Install(t, f.cert, f.key)
	got, err = handshake(t, cfg, client)
	require.NoError(t, err)
	require.Equal(t, second.Serial, got, "the next handshake presents the new certificate")
}

func TestBrokenReplacementKeepsTheLastGoodCertificate(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	ca := testcerts.NewCA(t, "test CA")
	good := ca.Server(t)
	good.Install(t, f.cert, f.key)
	var logs syncbuffer.Buffer
	r, err := New(Files{Cert: f.cert, Key: f.key}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	cfg := r.Config()
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

	testcerts.WriteAtomically(t, f.cert, []byte("-----BEGIN CERTIFICATE-----\nhalf"))
	for range 3 {
		got, err := handshake(t, cfg, client)
		require.NoError(t, err)
		require.Equal(t, good.Serial, got)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "do not load"), "said once, not per handshake:\n%s", logs.String())

	fixed := ca.Server(t)
	fixed.Install(t, f.cert, f.key)
	got, err := handshake(t, cfg, client)
	require.NoError(t, err)
	require.Equal(t, fixed.Serial, got)
}

func TestClientCARequiresAClientCertificate(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	ca := testcerts.NewCA(t, "server CA")
	clients := testcerts.NewCA(t, "client CA")
	ca.Server(t).Install(t, f.cert, f.key)
	testcerts.WriteAtomically(t, f.ca, clients.PEM)
	r, err := New(Files{Cert: f.cert, Key: f.key, ClientCA: f.ca}, nil)
	require.NoError(t, err)
	require.True(t, r.MutualTLS())
	cfg := r.Config()
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

	_, err = handshake(t, cfg, client)
	require.Error(t, err, "no client certificate")

	stranger := testcerts.NewCA(t, "another CA").Client(t, "mallory")
	client.Certificates = []tls.Certificate{stranger.TLS(t)}
	_, err = handshake(t, cfg, client)
	require.Error(t, err, "a certificate from another CA")

	client.Certificates = []tls.Certificate{clients.Client(t, "alice").TLS(t)}
	_, err = handshake(t, cfg, client)
	require.NoError(t, err)

	// The CA file rotates too: a new client CA is trusted at the next handshake.
	newClients := testcerts.NewCA(t, "client CA 2")
	testcerts.WriteAtomically(t, f.ca, newClients.PEM)
	client.Certificates = []tls.Certificate{newClients.Client(t, "bob").TLS(t)}
	_, err = handshake(t, cfg, client)
	require.NoError(t, err)
}

func TestNewNamesTheFileAtFault(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	_, err := New(Files{Cert: f.cert, Key: f.key}, nil)
	require.ErrorContains(t, err, f.cert)
	testcerts.NewCA(t, "ca").Server(t).Install(t, f.cert, f.key)
	require.NoError(t, os.WriteFile(f.ca, []byte("not pem"), 0o600))
	_, err = New(Files{Cert: f.cert, Key: f.key, ClientCA: f.ca}, nil)
	require.ErrorContains(t, err, f.ca)
	_, err = New(Files{Cert: f.cert}, nil)
	require.Error(t, err)
}

// TestExpiredCertificates: an expired certificate stops the start with
// its not-after; an expired replacement is refused (the previous one kept,
// said once); the one served expiring is logged once; NotAfter follows the
// certificate served (issue 24, item 14: an expired certificate was served
// with only "TLS files reloaded" in the log).
func TestExpiredCertificates(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	ca := testcerts.NewCA(t, "test CA")
	first := ca.Server(t) // valid from an hour ago for 24 hours
	first.Install(t, f.cert, f.key)
	var logs syncbuffer.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	_, err := newReloader(Files{Cert: f.cert, Key: f.key}, log, func() time.Time { return time.Now().Add(25 * time.Hour) })
	require.ErrorContains(t, err, "expired at")
	require.ErrorContains(t, err, f.cert)

	r, err := newReloader(Files{Cert: f.cert, Key: f.key}, log, clock)
	require.NoError(t, err)
	notAfter := r.NotAfter()
	require.WithinDuration(t, time.Now().Add(23*time.Hour), notAfter, 2*time.Hour)
	cfg := r.Config()
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

	advance(25 * time.Hour) // every certificate of this CA has expired by now
	ca.Server(t).Install(t, f.cert, f.key)
	for range 3 {
		_, _ = handshake(t, cfg, client) // the client's clock is the real one: it accepts
	}
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "do not load"), "the expired replacement is refused, once:\n%s", out)
	require.Contains(t, out, "expired at")
	require.Equal(t, 1, strings.Count(out, "the TLS certificate served has expired"), "said once:\n%s", out)
	require.NotContains(t, out, "TLS files reloaded")
	require.Equal(t, notAfter, r.NotAfter(), "still the first certificate")
}
