package webhooks_test

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/webhooks"
)

func TestPublic(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true, "8.8.8.8": true,
		"127.0.0.1": false, "127.9.9.9": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false,
		"192.168.1.1": false, "169.254.169.254": false, "fe80::1": false, "fc00::1": false, "fd12::1": false,
		"0.0.0.0": false, "::": false, "100.64.0.1": false, "224.0.0.1": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false, "::ffff:8.8.8.8": true, "192.0.2.1": false,
	} {
		require.Equal(t, want, webhooks.Public(netip.MustParseAddr(addr)), addr)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for raw, refusal := range map[string]string{
		"https://hooks.example.com/seatd":      "",
		"https://93.184.216.34:8443/x?a=b":     "",
		"http://hooks.example.com/seatd":       "must be https",
		"ftp://hooks.example.com/":             "must be an https URL",
		"hooks.example.com/seatd":              "absolute URL",
		"https://user:pw@hooks.example.com":    "user or password",
		"https://hooks.example.com/#frag":      "fragment",
		"https://127.0.0.1/":                   "private address",
		"https://[::1]/":                       "private address",
		"https://169.254.169.254/latest":       "private address",
		"https://10.0.0.8/":                    "private address",
		"https://localhost:8080/":              "private address",
		"https://" + strings.Repeat("a", 2050): "longer than",
	} {
		err := webhooks.CheckURL(raw, false)
		if refusal == "" {
			require.NoError(t, err, raw)
		} else {
			require.ErrorContains(t, err, refusal, raw)
		}
	}
	// The operator's flag allows private addresses and plain http.
	for _, raw := range []string{"http://127.0.0.1:9000/hook", "https://10.0.0.8/", "http://localhost/"} {
		require.NoError(t, webhooks.CheckURL(raw, true), raw)
	}
}

// TestClientRefusesPrivateDestinations: the dialled address is judged, so
// a name that resolves to loopback (localhost here; a rebound name alike)
// is refused as a literal address is.
func TestClientRefusesPrivateDestinations(t *testing.T) {
	t.Parallel()
	hit := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit <- struct{}{} }))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(u.Host)

	c := webhooks.NewClient(webhooks.ClientOptions{})
	for _, target := range []string{srv.URL, "http://localhost:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		resp, err := c.Post(target, "application/json", strings.NewReader("{}"))
		if resp != nil {
			_ = resp.Body.Close()
		}
		require.ErrorIs(t, err, webhooks.ErrForbiddenAddress, target)
	}
	require.Empty(t, hit, "no request reached the receiver")

	allowed := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true})
	resp, err := allowed.Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err, "--webhook-allow-private-addresses allows it")
	_ = resp.Body.Close()
}

func TestClientFollowsNoRedirectAndVerifiesTLS(t *testing.T) {
	t.Parallel()
	reached := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached <- struct{}{} }))
	t.Cleanup(target.Close)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	c := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true})
	resp, err := c.Post(redirect.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode, "a redirect is the answer")
	require.Empty(t, reached, "not followed")

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(tlsSrv.Close)
	_, err = c.Post(tlsSrv.URL, "application/json", strings.NewReader("{}"))
	require.ErrorContains(t, err, "certificate", "a certificate no root signed is refused")
	trusting := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true, TLS: &tls.Config{RootCAs: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}})
	resp, err = trusting.Post(tlsSrv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err, "verified against its CA")
	_ = resp.Body.Close()
}

func TestClientTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(func() { close(release); srv.Close() })
	c := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true, Timeout: 100 * time.Millisecond})
	_, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.Error(t, err)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a timeout: %v", err)
}

// TestDeliveryToAPrivateAddressIsAFailedAttempt: refused at the dial, the
// attempt is recorded (no request made) and retried like any failure.
func TestDeliveryToAPrivateAddressIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *webhooks.Config) { c.Client = webhooks.NewClient(webhooks.ClientOptions{}) })
	r := newReceiver(t, func(int) int { return http.StatusOK })
	ep := b.endpoint(t, r.URL)
	b.license(t)
	b.drain(t)
	require.Empty(t, r.requests())
	list, _, err := b.store.ListDeliveries(t.Context(), b.tenant.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, server.DeliveryPending, list[0].State)
	require.Contains(t, list[0].LastError, "not a public address")
	require.NotContains(t, list[0].LastError, ep.Secrets[0])
}
