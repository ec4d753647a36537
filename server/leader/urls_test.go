package leader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// withParams adds query parameters to a PostgreSQL URL.
func withParams(t *testing.T, raw string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestPoolOptionsInTheURLStillElect: the README documents pool_max_conns in
// --postgres-url; the elector's own connection must not send it to
// PostgreSQL as a setting (which refuses it, and nobody would ever lead).
func TestPoolOptionsInTheURLStillElect(t *testing.T) {
	t.Parallel()
	pg := withParams(t, testSchema(t), "pool_max_conns", "4", "pool_min_conns", "1")
	var c counting
	e := newElector(t, pg, "pooled", &c)
	e.Start(context.Background())
	require.Eventually(t, e.IsLeader, 10*time.Second, 20*time.Millisecond)
	id, err := e.LeaderID(t.Context())
	require.NoError(t, err)
	require.Equal(t, e.InstanceID(), id)
}

// TestLeaderIDIgnoresOtherDatabases: two deployments on one PostgreSQL
// server, in two databases with the same schema name, take the same lock
// key; each reports only the leader of its own database.
func TestLeaderIDIgnoresOtherDatabases(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	admin, err := pgx.Connect(t.Context(), pg)
	require.NoError(t, err)
	defer func() { _ = admin.Close(context.Background()) }()
	var schema string
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&schema))
	db := fmt.Sprintf("seatd_leader_db_%d", rand.Uint32())
	_, err = admin.Exec(t.Context(), "CREATE DATABASE "+db)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	})
	u, err := url.Parse(pg)
	require.NoError(t, err)
	u.Path = "/" + db
	other := u.String()
	conn, err := pgx.Connect(t.Context(), other)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	_ = conn.Close(t.Context())

	var c counting
	elsewhere := newElector(t, other, "other-deployment", &c)
	elsewhere.Start(context.Background())
	require.Eventually(t, elsewhere.IsLeader, 10*time.Second, 20*time.Millisecond)

	here := newElector(t, pg, "not-started", &c) // this deployment has no leader
	id, err := here.LeaderID(t.Context())
	require.NoError(t, err)
	require.Empty(t, id, "the leader of another database is not this deployment's")
}
