package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHealthcheckExitsZeroOnlyOnReady(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			http.Error(w, "not ready: draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	var stderr bytes.Buffer
	require.Equal(t, 0, run(nil, env(map[string]string{"SEATD_HTTP_ADDR": addr}), &stderr), stderr.String())
	require.Equal(t, 0, run([]string{srv.URL + "/readyz"}, env(nil), &stderr), stderr.String())
	ready = false
	stderr.Reset()
	require.Equal(t, 1, run(nil, env(map[string]string{"SEATD_HTTP_ADDR": addr}), &stderr))
	require.Contains(t, stderr.String(), "503", "says what seatd answered")
	require.Equal(t, 2, run([]string{"readyz"}, env(nil), &stderr), "neither a path nor a URL")
	require.Equal(t, 2, run([]string{"/a", "/b"}, env(nil), &stderr))
}

func TestHealthcheckAsksTheContainersOwnAddress(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "http://127.0.0.1:8080/readyz"},
		{map[string]string{"SEATD_HTTP_ADDR": "0.0.0.0:8080"}, "http://127.0.0.1:8080/readyz"},
		{map[string]string{"SEATD_HTTP_ADDR": ":9090"}, "http://127.0.0.1:9090/readyz"},
		{map[string]string{"SEATD_HTTP_ADDR": "[::]:8080"}, "http://[::1]:8080/readyz"},
		{map[string]string{"SEATD_HTTP_ADDR": "10.1.2.3:8080", "SEATD_TLS_CERT_FILE": "/tls/c"}, "https://10.1.2.3:8080/readyz"},
	} {
		got, err := checkURL("/readyz", env(c.env))
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%v", c.env)
	}
	_, err := checkURL("/readyz", env(map[string]string{"SEATD_HTTP_ADDR": "nonsense"}))
	require.ErrorContains(t, err, "SEATD_HTTP_ADDR")
}
