// Package tlsreload serves TLS from certificate files that may be replaced
// while seatd runs (cert-manager, a renewal cron): each handshake checks
// whether the files changed and, if so, loads them again. Connections
// already open keep the certificate they were made with; nothing restarts
// and nothing is dropped. A replacement that does not load (a half-written
// file, a key that does not match, a certificate past its not-after) is
// logged and the last good one kept; an expired certificate stops the
// start, and one that expires while served is logged once (NotAfter is
// exported as a metric for an alert before that).
package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Files are the PEM files TLS is served from. ClientCA, when set, makes
// client certificates signed by it required (mTLS).
type Files struct {
	Cert, Key, ClientCA string
}

// Reloader hands out the current certificate and client CA pool.
type Reloader struct {
	files Files
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	stamps   [3]stamp // of files.Cert, Key, ClientCA when last loaded
	cert     *tls.Certificate
	notAfter time.Time // of cert's leaf
	expired  bool      // the served certificate's expiry was logged
	pool     *x509.CertPool
	failed   [3]stamp // the stamps of a set that failed to load (logged once)
}

// stamp identifies one version of a file: a replacement (rename over it,
// or a rewrite) changes its inode, size or modification time.
type stamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

// New loads the files once; an error names the file at fault.
func New(files Files, log *slog.Logger) (*Reloader, error) {
	return newReloader(files, log, time.Now)
}

func newReloader(files Files, log *slog.Logger, now func() time.Time) (*Reloader, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{files: files, log: log, now: now}
	stamps, err := r.stat()
	if err != nil {
		return nil, err
	}
	if err := r.load(stamps); err != nil {
		return nil, err
	}
	return r, nil
}

// Config returns a server TLS config offering the given ALPN protocols
// ("h2" for gRPC); every handshake gets the files' current contents.
func (r *Reloader) Config(nextProtos ...string) *tls.Config {
	current := func() *tls.Config {
		cert, pool := r.current()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{*cert},
			NextProtos:   nextProtos,
		}
		if pool != nil {
			c.ClientCAs = pool
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
		return c
	}
	base := current()
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return current(), nil }
	return base
}

// MutualTLS reports whether client certificates are required.
func (r *Reloader) MutualTLS() bool { return r.files.ClientCA != "" }

// current reloads the files if they changed since the last load.
func (r *Reloader) current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamps, err := r.stat()
	if err == nil && stamps != r.stamps && stamps != r.failed {
		err = r.load(stamps)
	}
	if err != nil && stamps != r.failed { // say it once per failed version
		r.failed = stamps
		r.log.Warn("TLS files changed but do not load; still serving the previous certificate", "err", err)
	}
	if !r.expired && !r.now().Before(r.notAfter) {
		r.expired = true
		r.log.Error("the TLS certificate served has expired: clients refuse the handshake; replace the files (seatd re-reads them)",
			"cert", r.files.Cert, "not_after", r.notAfter.UTC().Format(time.RFC3339))
	}
	return r.cert, r.pool
}

// NotAfter is the expiry of the certificate served now (its leaf).
func (r *Reloader) NotAfter() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notAfter
}

func (r *Reloader) stat() ([3]stamp, error) {
	var out [3]stamp
	for i, path := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			return out, fmt.Errorf("TLS file %s: %w", path, err)
		}
		out[i] = stamp{size: fi.Size(), mtime: fi.ModTime()}
		out[i].ino = inode(fi)
	}
	return out, nil
}

// load reads the files; on success they become current. Call with r.mu
// held (or before r is shared).
func (r *Reloader) load(stamps [3]stamp) error {
	cert, err := tls.LoadX509KeyPair(r.files.Cert, r.files.Key)
	if err != nil {
		return fmt.Errorf("TLS certificate %s with key %s: %w", r.files.Cert, r.files.Key, err)
	}
	leaf := cert.Leaf // parsed by LoadX509KeyPair
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("TLS certificate %s: %w", r.files.Cert, err)
		}
	}
	if !r.now().Before(leaf.NotAfter) {
		return fmt.Errorf("TLS certificate %s expired at %s (its not-after): clients would refuse it",
			r.files.Cert, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	var pool *x509.CertPool
	if r.files.ClientCA != "" {
		pem, err := os.ReadFile(r.files.ClientCA)
		if err != nil {
			return fmt.Errorf("TLS client CA %s: %w", r.files.ClientCA, err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS client CA %s: no PEM certificate in it", r.files.ClientCA)
		}
	}
	if r.cert != nil {
		r.log.Info("TLS files reloaded", "cert", r.files.Cert, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.cert, r.pool, r.stamps = &cert, pool, stamps
	r.notAfter, r.expired = leaf.NotAfter, false
	return nil
}
