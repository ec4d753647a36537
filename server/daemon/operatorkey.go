package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/seatd/seatd/server"
)

const operatorKeyFile = "operator.key"

// exampleKeys are operator keys printed in docs: a server started with one
// could be opened by anyone who read them.
var exampleKeys = map[string]bool{"a-long-random-secret": true, "CHANGE-ME-to-a-long-random-secret": true}

// checkOperatorKey enforces the minimum for a key that opens every tenant:
// at least 16 characters, at least 8 of them different, no whitespace (a
// bearer header cannot carry it, so such a key could never match), and not
// one from the docs. A generated key (sop_ + 32 random characters) passes.
func checkOperatorKey(key string) error {
	distinct := map[rune]bool{}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return errors.New("the operator key must not contain whitespace or control characters")
		}
		distinct[r] = true
	}
	switch {
	case len(key) < 16:
		return errors.New("the operator key must be at least 16 characters")
	case len(distinct) < 8:
		return errors.New("the operator key must have at least 8 different characters (use a random one: openssl rand -hex 24)")
	case exampleKeys[key]:
		return errors.New("the operator key is the example from the README; use a random one: openssl rand -hex 24")
	}
	return nil
}

// loadOperatorKey returns the configured operator key, or the one kept in the
// data dir, or a new one on first start: generated reports it, and the
// caller keeps it (saveOperatorKey) and prints it once the ports are bound.
func loadOperatorKey(configured, dataDir string) (key string, generated bool, err error) {
	if configured != "" {
		return configured, false, nil
	}
	path := filepath.Join(dataDir, operatorKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		key = strings.TrimSpace(string(b))
		if err := checkOperatorKey(key); err != nil {
			return "", false, fmt.Errorf("operator key file %s: %v; delete it to generate a new key", path, err)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("read operator key: %w", err)
	}
	return server.NewSecret(server.PrefixOperator), true, nil
}

// saveOperatorKey keeps a generated key in the data dir.
func saveOperatorKey(dataDir, key string) error {
	path := filepath.Join(dataDir, operatorKeyFile)
	// O_EXCL: two processes racing on a fresh dir must not both win.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write operator key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("write operator key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write operator key: %w", err)
	}
	return nil
}
