package record

import (
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql
	"github.com/stretchr/testify/require"
)

// TestMigrateReportsWhatItApplied: on an empty schema every migration is
// applied and reported (what `seatd migrate up` prints); then nothing is.
func TestMigrateReportsWhatItApplied(t *testing.T) {
	t.Parallel()
	_, _, url := newSchema(t)
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer db.Close()

	applied, err := Migrate(t.Context(), db, nil)
	require.NoError(t, err)
	st, err := MigrationStatus(t.Context(), db)
	require.NoError(t, err)
	require.NotEmpty(t, st)
	require.Len(t, applied, len(st), "every migration applied is reported")
	for i, m := range st {
		require.True(t, m.Applied)
		require.Equal(t, m.Version, applied[i].Version)
		require.Equal(t, m.Name, applied[i].Name)
	}
	again, err := Migrate(t.Context(), db, nil)
	require.NoError(t, err)
	require.Empty(t, again)
}
