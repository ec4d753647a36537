package seatctl

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seatd/seatd/server/licensefile"
)

// The commands of this file and vendor.go, site.go work on files, not on
// seatd: a vendor signs on a machine that never reaches a site.

// refusedError is a document (license file, site request, usage export,
// key) that does not verify, or a file that is not replaced: ExitRefused.
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

func refusedf(format string, args ...any) error { return refusedError{fmt.Errorf(format, args...)} }

// readInput reads a file named by a flag or an argument.
func readInput(what, path string) ([]byte, error) {
	if path == "" {
		return nil, usageErrorf("%s: no file given", what)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("%s: %v", what, unwrapPath(err))
	}
	return data, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// readPrivateKey reads a PEM PKCS #8 Ed25519 key file (keygen's).
func readPrivateKey(flag, path string) (ed25519.PrivateKey, error) {
	data, err := readInput(flag, path)
	if err != nil {
		return nil, err
	}
	priv, err := licensefile.ParsePrivateKey(data)
	if err != nil {
		return nil, refusedf("%s %s: %w", flag, path, err)
	}
	return priv, nil
}

// readPublicKeys reads a vendor's public keys (PEM, JWK, JWKS).
func readPublicKeys(flag, path string) ([]ed25519.PublicKey, error) {
	data, err := readInput(flag, path)
	if err != nil {
		return nil, err
	}
	keys, err := licensefile.ParsePublicKeys(data)
	if err != nil {
		return nil, refusedf("%s %s: %w", flag, path, err)
	}
	return keys, nil
}

// writeKeyPair writes a new key pair into dir as name.key (PEM PKCS #8,
// 0600) and name.pub (PEM PKIX, 0644), making dir (0700) if need be. It
// never replaces a key: losing a vendor key orphans every file it signed,
// losing a site key every file made for it.
func writeKeyPair(dir, name string) (kid, keyPath, pubPath string, err error) {
	if dir == "" {
		return "", "", "", usageErrorf("-o DIR: the directory to write %s.key and %s.pub into is required", name, name)
	}
	keyPath, pubPath = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", "", refusedf("%s exists: a key is never replaced (move it away first, and keep it: what it signed needs it)", p)
		}
	}
	pub, priv, err := licensefile.GenerateKey()
	if err != nil {
		return "", "", "", err
	}
	privPEM, err := licensefile.MarshalPrivateKey(priv)
	if err != nil {
		return "", "", "", err
	}
	pubPEM, err := licensefile.MarshalPublicKey(pub)
	if err != nil {
		return "", "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", usageErrorf("-o %s: %v", dir, unwrapPath(err))
	}
	if err := writeNew(keyPath, privPEM, 0o600); err != nil {
		return "", "", "", err
	}
	if err := writeNew(pubPath, pubPEM, 0o644); err != nil {
		_ = os.Remove(keyPath) // a private key without its public half is of no use
		return "", "", "", err
	}
	return licensefile.KeyID(pub), keyPath, pubPath, nil
}

// writeNew creates path with mode, failing if it exists (O_EXCL: no race
// with another keygen).
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return refusedf("%s exists: a key is never replaced", path)
		}
		return usageErrorf("%v", unwrapPath(err))
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// writeOutput writes a document to path, or to stdout for "" and "-".
func (g *globals) writeOutput(path string, data []byte) error {
	if path == "" || path == "-" {
		_, err := g.stdout.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return usageErrorf("-o: %v", unwrapPath(err))
	}
	return nil
}

// toStdout reports whether -o sends the document to stdout.
func toStdout(path string) bool { return path == "" || path == "-" }

// trimmedFile reads a one-line file (a machine-id), trimmed.
func trimmedFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
