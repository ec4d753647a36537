package daemon

import (
	"net"
	"net/netip"

	"github.com/seatd/seatd/server/console"
)

// consoleURL is where a person on this machine opens the web console: the
// HTTP listener's address, with localhost for a listener on every address
// (0.0.0.0 or [::] is not an address a browser can open).
func consoleURL(httpAddr string, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return scheme + "://" + httpAddr + console.Prefix
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + console.Prefix
}
