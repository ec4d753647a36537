package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/seatd/seatd/server/sso"
)

// openSSO reads --sso-config: nil without one. Console sessions are
// sealed under session_key_file's secret, else under a key derived from
// the operator key (which every instance shares already).
func openSSO(cfg *Config, operatorKey string, log *slog.Logger) (*sso.Verifier, error) {
	if cfg.SSOConfig == "" {
		return nil, nil
	}
	c, err := sso.LoadConfig(cfg.SSOConfig)
	if err != nil {
		return nil, fmt.Errorf("--sso-config: %w", err)
	}
	secret := []byte(operatorKey)
	if c.SessionKeyFile != "" {
		b, err := os.ReadFile(c.SessionKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--sso-config: session_key_file: %w", err)
		}
		if secret = []byte(strings.TrimSpace(string(b))); len(secret) < 32 {
			return nil, fmt.Errorf("--sso-config: session_key_file: 32 characters or more")
		}
	}
	v, err := sso.NewVerifier(c, sso.Options{SessionKey: secret, SessionLifetime: cfg.SSOSessionLifetime, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--sso-config: %w", err)
	}
	names := make([]string, 0, len(c.Issuers))
	for _, is := range c.Issuers {
		names = append(names, is.Name)
	}
	log.Info("single sign-on", "issuers", strings.Join(names, ","))
	return v, nil
}
