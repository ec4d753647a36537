package distributed

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/redistest"
)

// TestRedisThatEvictsAnyKeyIsRefused: seatd does not start on a Redis whose
// maxmemory-policy may evict any key, and says what to change; policies
// that evict only keys with a TTL, or none, are accepted.
func TestRedisThatEvictsAnyKeyIsRefused(t *testing.T) {
	t.Parallel()
	testServers(t)
	for policy, refused := range map[string]bool{"allkeys-lru": true, "allkeys-random": true, "volatile-lru": false, "noeviction": false} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			r := redistest.StartServer(t, "--maxmemory-policy", policy)
			loc := newLocation(t)
			s, err := Open(t.Context(), Options{PostgresURL: loc.pgURL, RedisURL: r.URL(), RedisKeyPrefix: loc.prefix, Logger: testLogger})
			if !refused {
				require.NoError(t, err)
				require.NoError(t, s.Close())
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), "maxmemory-policy "+policy)
			require.Contains(t, err.Error(), "noeviction")
		})
	}
}
