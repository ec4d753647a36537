package webhooks

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// DefaultTimeout bounds one delivery request (--webhook-timeout).
const DefaultTimeout = 10 * time.Second

// ClientOptions shape the HTTP client deliveries are sent with.
type ClientOptions struct {
	// Timeout bounds one request, from the dial to the end of the answer
	// (default DefaultTimeout).
	Timeout time.Duration
	// AllowPrivate lets deliveries reach loopback, link-local, private
	// and other non-public addresses (--webhook-allow-private-addresses),
	// and endpoints use plain http. Off, such a destination is refused
	// when the address is dialled (after DNS: a name that resolves to one,
	// or is rebound to one, is refused too).
	AllowPrivate bool
	// TLS is the client's TLS configuration (nil: the system's roots,
	// TLS 1.2 or later); tests give theirs a private CA.
	TLS *tls.Config
}

// ErrForbiddenAddress: a delivery's destination is not a public address.
var ErrForbiddenAddress = errors.New("destination is not a public address (--webhook-allow-private-addresses allows it)")

// NewClient is the client deliveries are sent with: no redirect followed
// (a 3xx is a failed attempt), TLS verified, no proxy from the
// environment, each dialled address checked (Control) unless AllowPrivate.
func NewClient(o ClientOptions) *http.Client {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: timeout}
	if !o.AllowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			return checkDialed(address)
		}
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLS != nil {
		tlsConf = o.TLS.Clone()
	}
	transport := &http.Transport{
		Proxy:                 nil, // never an environment's proxy: the address dialled is the one judged
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConf,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer, not followed
		},
	}
}

// checkDialed refuses a dial to an address that is not public: the
// address the socket is about to connect to, whatever name led to it.
func checkDialed(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, ErrForbiddenAddress)
	}
	if !Public(ip) {
		return fmt.Errorf("dial %s: %w", address, ErrForbiddenAddress)
	}
	return nil
}

// nonPublic are the ranges Public refuses beyond the standard library's
// classes: "this network", shared address space (carrier-grade NAT),
// benchmarking, IETF protocol assignments, documentation and the
// reserved ranges.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("100::/64"),
}

// Public reports whether ip is an address a delivery may reach without
// --webhook-allow-private-addresses: not loopback, link-local, private
// (RFC 1918, unique local), unspecified, multicast, or another reserved
// range. An IPv4-mapped IPv6 address is judged as its IPv4 address.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// CheckURL judges an endpoint's URL as it is registered: absolute https
// (http only with allowPrivate), a host, no user info or fragment; a host
// that is a literal address must be Public unless allowPrivate. A name is
// judged when it is dialled (NewClient). The error says what is wrong.
func CheckURL(raw string, allowPrivate bool) error {
	if len(raw) > 2048 {
		return errors.New("is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return errors.New("must be an absolute URL (https://host/path)")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	case u.Scheme == "http":
		return errors.New("must be https (plain http only with --webhook-allow-private-addresses)")
	default:
		return errors.New("must be an https URL")
	}
	if u.User != nil {
		return errors.New("must not hold a user or password")
	}
	if u.Fragment != "" {
		return errors.New("must not hold a fragment")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && !Public(ip) {
		return errors.New("points at a loopback, link-local or private address (refused unless --webhook-allow-private-addresses)")
	}
	if u.Hostname() == "localhost" && !allowPrivate {
		return errors.New("points at a loopback, link-local or private address (refused unless --webhook-allow-private-addresses)")
	}
	return nil
}
