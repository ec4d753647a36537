package daemon

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seatd/seatd/server/licensefile"
)

// VendorKey is the vendor's public key built into seatd, for a vendor
// that ships seatd with its products: base64url of the 32-byte Ed25519
// key (a JWK's x), several separated by commas while a vendor rotates its
// key. Set at build time (docs/concepts/license-files.md):
//
//	x=$(openssl pkey -pubin -in vendor.pub -outform DER | tail -c 32 | base64 | tr '+/' '-_' | tr -d '=\n')
//	go build -ldflags "-X github.com/seatd/seatd/server/daemon.VendorKey=$x" ./server/cmd/seatd
//
// Such a seatd verifies license files with this key only: --vendor-key
// is refused, so that a customer cannot verify a file they signed with a
// key of their own.
var VendorKey string

// vendorKeys are the keys that verify --license-file: the built-in ones,
// or --vendor-key's. Errors name which.
func vendorKeys(cfg Config) ([]ed25519.PublicKey, error) {
	if VendorKey != "" {
		var keys []ed25519.PublicKey
		for part := range strings.SplitSeq(VendorKey, ",") {
			k, err := licensefile.ParsePublicKeys([]byte(part))
			if err != nil {
				return nil, fmt.Errorf("the vendor key built into this seatd: %w", err)
			}
			keys = append(keys, k...)
		}
		return keys, nil
	}
	data, err := os.ReadFile(cfg.VendorKey)
	if err != nil {
		return nil, fmt.Errorf("--vendor-key: %w", err)
	}
	keys, err := licensefile.ParsePublicKeys(data)
	if err != nil {
		return nil, fmt.Errorf("--vendor-key %s: %w", cfg.VendorKey, err)
	}
	return keys, nil
}

// validateLocked checks the locked-mode flags together.
func (c *Config) validateLocked() error {
	switch {
	case c.LicenseFileWatchInterval < 100*time.Millisecond:
		return errors.New("--license-file-watch-interval must be at least 100ms")
	case c.LicenseFileWatchTimeout < 100*time.Millisecond:
		return errors.New("--license-file-watch-timeout must be at least 100ms")
	case c.LicenseFile == "" && c.VendorKey != "":
		return errors.New("--vendor-key needs --license-file (the file it verifies)")
	case c.LicenseFile != "" && VendorKey != "" && c.VendorKey != "":
		return errors.New("--vendor-key: this seatd was built with its vendor's key, which no other key can replace")
	case c.LicenseFile != "" && VendorKey == "" && c.VendorKey == "":
		return errors.New("--license-file needs the vendor's public key to verify it: --vendor-key (SEATD_VENDOR_KEY)")
	}
	return nil
}
