package daemon

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestMigrateTakesPoolOptionsInTheURL: `seatd migrate` takes the same URL
// as the daemon, pool_* parameters included (they size the daemon's pool
// and are not PostgreSQL settings).
func TestMigrateTakesPoolOptionsInTheURL(t *testing.T) {
	t.Parallel()
	base := os.Getenv("SEATD_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	conn, err := pgx.Connect(t.Context(), base)
	require.NoError(t, err, "PostgreSQL is needed for this test: run scripts/services.sh (or set SEATD_TEST_POSTGRES_URL)")
	defer func() { _ = conn.Close(context.Background()) }()
	schema := fmt.Sprintf("seatd_migrate_%d", rand.Uint32())
	_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "4")
	u.RawQuery = q.Encode()

	var out, errOut bytes.Buffer
	code := migrateMain(t.Context(), []string{"up", "--postgres-url", u.String()}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'sessions'`, schema).Scan(&n))
	require.Equal(t, 1, n, "the schema was applied")
}
