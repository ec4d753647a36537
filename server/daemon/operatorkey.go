package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seatd/seatd/server"
)

const operatorKeyFile = "operator.key"

// loadOperatorKey returns the configured operator key, or the one kept in the
// data dir, generating it on first start. generated reports a new key, which
// the caller prints once.
func loadOperatorKey(configured, dataDir string) (key string, generated bool, err error) {
	if configured != "" {
		return configured, false, nil
	}
	path := filepath.Join(dataDir, operatorKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		key = strings.TrimSpace(string(b))
		if len(key) < 16 {
			return "", false, fmt.Errorf("operator key file %s is empty or too short; delete it to generate a new key", path)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("read operator key: %w", err)
	}
	key = server.NewSecret(server.PrefixOperator)
	// O_EXCL: two processes racing on a fresh dir must not both win.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("write operator key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		_ = f.Close()
		return "", false, fmt.Errorf("write operator key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("write operator key: %w", err)
	}
	return key, true, nil
}
