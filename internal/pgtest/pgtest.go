// Package pgtest gives a test a fresh schema on the test PostgreSQL
// (SEATD_TEST_POSTGRES_URL, default the local one), dropped when the test
// ends, for tests that run seatd (or its migrations) as a separate program.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// DefaultURL is the PostgreSQL that scripts/services.sh starts.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// BaseURL is SEATD_TEST_POSTGRES_URL, or DefaultURL.
func BaseURL() string {
	if u := os.Getenv("SEATD_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// FreshSchema creates a schema named prefix_<random> and returns it with
// the URL that makes it the search path; the schema is dropped when the
// test ends.
func FreshSchema(t testing.TB, prefix string) (schema, schemaURL string) {
	t.Helper()
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err, "PostgreSQL at %s: run scripts/services.sh, or point SEATD_TEST_POSTGRES_URL at a running server", base)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = prefix + "_" + hex.EncodeToString(b[:])
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(ctx)
	})
	u, err := url.Parse(base)
	require.NoError(t, err, "SEATD_TEST_POSTGRES_URL")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return schema, u.String()
}
