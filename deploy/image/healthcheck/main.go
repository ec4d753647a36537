// Command seatd-healthcheck asks the seatd in its own container whether it is
// ready, for a container runtime's health check (compose's healthcheck):
// the image is built FROM scratch, so it has no curl or wget.
//
//	seatd-healthcheck [PATH|URL]
//
// PATH (default /readyz) is asked of the address in SEATD_HTTP_ADDR (the
// image's default 0.0.0.0:8080, asked on loopback), over HTTPS when
// SEATD_TLS_CERT_FILE is set (the certificate is not verified: the check
// asks whether this process serves, as the kubelet's HTTPS probes do). A
// full URL is asked as it is. Exit 0 on 200, 1 on any other answer or none.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// timeout bounds one check; the runtime's own timeout may cut it shorter.
const timeout = 5 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: seatd-healthcheck [PATH|URL] (default /readyz)")
		return 2
	}
	target := "/readyz"
	if len(args) == 1 {
		target = args[0]
	}
	url, err := checkURL(target, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "seatd-healthcheck:", err)
		return 2
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // a question to our own process, as the kubelet's HTTPS probes ask it
		Proxy:           nil,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "seatd-healthcheck:", err)
		return 2
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "seatd-healthcheck:", err)
		return 1
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "seatd-healthcheck: %s: %s %s\n", url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}

// checkURL is target as a URL: a full one as it is, a path on this
// container's seatd (SEATD_HTTP_ADDR, an unspecified host asked on loopback).
func checkURL(target string, getenv func(string) string) (string, error) {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		return target, nil
	}
	if !strings.HasPrefix(target, "/") {
		return "", fmt.Errorf("%q: want a path (/readyz) or an http(s) URL", target)
	}
	addr := getenv("SEATD_HTTP_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("SEATD_HTTP_ADDR %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	scheme := "http"
	if getenv("SEATD_TLS_CERT_FILE") != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + target, nil
}
