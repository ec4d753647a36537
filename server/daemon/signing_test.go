package daemon

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSigningKeyEncryptionKeyConfig(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := base64.StdEncoding.EncodeToString(raw)
	getenv := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	c, err := ParseConfig(nil, getenv(map[string]string{"SEATD_SIGNING_KEY_ENCRYPTION_KEY": key}), io.Discard)
	require.NoError(t, err)
	s, err := signingSealer(c)
	require.NoError(t, err)
	require.True(t, s.Encrypts())

	c, err = ParseConfig(nil, getenv(nil), io.Discard)
	require.NoError(t, err)
	s, err = signingSealer(c)
	require.NoError(t, err)
	require.False(t, s.Encrypts(), "no key: signing keys are kept plain")

	bad := base64.StdEncoding.EncodeToString(raw[:16])
	_, err = ParseConfig(nil, getenv(map[string]string{"SEATD_SIGNING_KEY_ENCRYPTION_KEY": bad}), io.Discard)
	require.ErrorContains(t, err, "--signing-key-encryption-key")
	require.NotContains(t, err.Error(), bad, "the key is never echoed")

	file := filepath.Join(t.TempDir(), "kek")
	require.NoError(t, os.WriteFile(file, []byte(key+"\n"), 0o600))
	c, err = ParseConfig([]string{"--signing-key-encryption-key-file", file}, getenv(nil), io.Discard)
	require.NoError(t, err)
	s, err = signingSealer(c)
	require.NoError(t, err)
	require.True(t, s.Encrypts())

	_, err = ParseConfig([]string{"--signing-key-encryption-key-file", file}, getenv(map[string]string{"SEATD_SIGNING_KEY_ENCRYPTION_KEY": key}), io.Discard)
	require.ErrorContains(t, err, "not both")

	require.NoError(t, os.WriteFile(file, []byte(bad), 0o600))
	c, err = ParseConfig([]string{"--signing-key-encryption-key-file", file}, getenv(nil), io.Discard)
	require.NoError(t, err)
	_, err = signingSealer(c)
	require.ErrorContains(t, err, file)
	require.NotContains(t, err.Error(), bad)
}
