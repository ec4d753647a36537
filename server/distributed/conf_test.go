package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// liveConf reads the settings Redis judges a license by.
func liveConf(t *testing.T, s *Store, licenseID string) (version, seats string) {
	t.Helper()
	v, err := s.rdb.HMGet(t.Context(), s.live.Keys().License(licenseID)[0], "version", "seats").Result()
	require.NoError(t, err)
	version, _ = v[0].(string)
	seats, _ = v[1].(string)
	return version, seats
}

// TestFailedSettingsPushIsRetried: UpdateLicense succeeds (the record holds
// the change) while Redis refuses the copy of the new settings; the store
// keeps retrying, and once Redis answers the lower seat limit is enforced.
func TestFailedSettingsPushIsRetried(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = 100 * time.Millisecond })
	fail := newFailScript(live.Script("setconf"))
	s.rdb.AddHook(fail)

	lic := mkLicense(t, s, tn.ID, 3, time.Minute)
	acq(t, s, lic.Key, "a") // builds the live state
	_, before := liveConf(t, s, lic.ID)
	require.Equal(t, "3", before)

	fail.on.Store(true)
	_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats = 1; return nil })
	require.NoError(t, err, "the change is recorded even though Redis refused its copy")
	refused := fail.refused.Load()
	require.Eventually(t, func() bool { return fail.refused.Load() >= refused+3 }, 10*time.Second, 10*time.Millisecond,
		"the flush loop retries the copy")
	_, seats := liveConf(t, s, lic.ID)
	require.Equal(t, "3", seats, "Redis still has the old settings while it refuses them")
	require.EqualValues(t, 1, s.BackgroundStats().SettingsCopiesBehind, "/metrics shows the copy waiting")

	fail.on.Store(false)
	require.Eventually(t, func() bool {
		_, seats := liveConf(t, s, lic.ID)
		return seats == "1"
	}, 5*time.Second, 20*time.Millisecond, "the flush loop pushes the settings once Redis answers")
	// The loop takes the license off its list just after the push lands:
	// the settings can be seen in Redis a moment before.
	require.Eventually(t, func() bool { return s.BackgroundStats().SettingsCopiesBehind == 0 }, 5*time.Second,
		10*time.Millisecond, "/metrics shows no copy waiting once it landed")
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the new limit of 1 holds")
}

// TestSyncConfRepairsSettingsLeftBehind: settings in Redis behind the record
// (a push that failed on a process that then died) are brought up to date by
// the reconciliation the cleanup leader runs; current ones are left alone.
func TestSyncConfRepairsSettingsLeftBehind(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	behind := mkLicense(t, s, tn.ID, 3, time.Minute)
	current := mkLicense(t, s, tn.ID, 4, time.Minute)
	acq(t, s, behind.Key, "a")
	acq(t, s, current.Key, "a")
	_, err := s.UpdateLicense(t.Context(), tn.ID, behind.ID, func(l *server.License) error { l.Seats = 1; return nil })
	require.NoError(t, err)
	version, seats := liveConf(t, s, behind.ID)
	require.Equal(t, "1", seats)
	// Roll Redis back to the settings before the update, as if the push
	// had never happened.
	require.NoError(t, s.rdb.HSet(t.Context(), s.live.Keys().License(behind.ID)[0], "version", "1", "seats", "3").Err())
	currentVersion, _ := liveConf(t, s, current.ID)

	require.NoError(t, s.syncConf(t.Context()))
	v, seats := liveConf(t, s, behind.ID)
	require.Equal(t, [2]string{version, "1"}, [2]string{v, seats}, "settings pushed again from the record")
	v, seats = liveConf(t, s, current.ID)
	require.Equal(t, [2]string{currentVersion, "4"}, [2]string{v, seats}, "a current license is untouched")
	_, _, err = tryAcq(t.Context(), s, behind.Key, "b")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
}
