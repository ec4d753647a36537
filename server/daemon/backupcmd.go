package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/seatd/seatd/server/embedded"
)

// backupMain is `seatd backup [--addr HOST:PORT] [--operator-key KEY] FILE`:
// a hot copy of a running embedded seatd's data, fetched from its HTTP
// port (the running server holds the database's lock, so nothing else
// may open it). FILE appears only once the copy is whole, synced and
// checked.
func backupMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("backup", stdout, stderr)
	addr := c.flags.String("addr", envOr("http-addr", flagDefault("http-addr")), "the running seatd's HTTP address, or an http(s):// URL (SEATD_HTTP_ADDR)")
	key := c.flags.String("operator-key", os.Getenv(EnvName("operator-key")), "operator key (SEATD_OPERATOR_KEY); default: the one kept in --data-dir")
	dataDir := c.flags.String("data-dir", envOr("data-dir", flagDefault("data-dir")), "where to find the operator key when none is given (SEATD_DATA_DIR)")
	caFile := c.flags.String("cacert", "", "https: trust this PEM CA bundle (a private CA) besides the system's")
	certFile := c.flags.String("cert", "", "https: the client certificate (PEM) a server with --tls-client-ca-file requires")
	keyFile := c.flags.String("key", "", "https: the client certificate's private key (PEM)")
	files, code, ok := c.parse(args, "Usage: seatd backup [--addr HOST:PORT] [--operator-key KEY] FILE\n\n  Copies the data of a running embedded seatd into FILE (written to FILE.tmp,\n  synced and checked, then renamed).")
	if !ok {
		return code
	}
	if len(files) != 1 {
		return c.fail(2, "name one FILE to write (see seatd backup -h)")
	}
	var err error
	if *key == "" {
		if *key, err = keptOperatorKey(*dataDir); err != nil {
			return c.fail(2, "%v", err)
		}
	}
	client, err := backupClient(*caFile, *certFile, *keyFile)
	if err != nil {
		return c.fail(2, "%v", err)
	}
	n, err := fetchBackup(ctx, client, backupURL(*addr), *key, files[0])
	if err != nil {
		return c.fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "seatd backup: wrote %d bytes to %s\n", n, files[0])
	return 0
}

func envOr(flagName, def string) string {
	if v := os.Getenv(EnvName(flagName)); v != "" {
		return v
	}
	return def
}

// keptOperatorKey reads the key seatd generated and kept in its data dir.
func keptOperatorKey(dataDir string) (string, error) {
	path := filepath.Join(dataDir, operatorKeyFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no --operator-key given and none kept in %s (%v)", path, errors.Unwrap(err))
	}
	return strings.TrimSpace(string(b)), nil
}

// backupClient is the HTTP client for an https --addr: a private CA and a
// client certificate (mTLS) when given.
func backupClient(caFile, certFile, keyFile string) (*http.Client, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return http.DefaultClient, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--cert and --key go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}}, nil
}

func backupURL(addr string) string {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return strings.TrimSuffix(addr, "/") + backupPath
}

// fetchBackup writes the server's copy to file: first to file.tmp, synced
// and checked as restore would check it, then renamed, so that file is
// never a partial copy.
func fetchBackup(ctx context.Context, client *http.Client, url, key, file string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("--addr: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach seatd: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s answered %s: %s", url, resp.Status, errorMessage(resp.Body))
	}

	tmp := file + ".tmp"
	n, err := writeSynced(tmp, resp.Body)
	if err == nil {
		err = embedded.CheckBackup(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	return n, syncDirOf(file)
}

// errorMessage is the message of a REST error body, or the body itself.
func errorMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 4096))
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &st) == nil && st.Message != "" {
		return st.Message
	}
	return strings.TrimSpace(string(b))
}

// writeSynced writes r to a new file at path and fsyncs it. A body cut
// short of its Content-Length fails here (io.ErrUnexpectedEOF).
func writeSynced(path string, r io.Reader) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err != nil {
		_ = f.Close()
		return 0, fmt.Errorf("receive the copy: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return 0, err
	}
	return n, f.Close()
}

// syncDirOf makes a rename of file durable.
func syncDirOf(file string) error {
	d, err := os.Open(filepath.Dir(file))
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}
