package distributed

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// TestDueLeasesAcrossManyLicenses: DueLeases asks licenses a pipeline at a
// time and stops early once a page is full; whatever the page size, the
// pages are the due leases in (deadline, id) order, each once, across
// licenses whose hints are due with or without due leases (renewed since).
// ExpireLeases then records them all, batches spanning many licenses, and
// the hints end up after now.
func TestDueLeasesAcrossManyLicenses(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	ctx := t.Context()
	const nLicenses, perLicense = 120, 4
	now, err := s.live.Now(ctx)
	require.NoError(t, err)
	slack := server.WriteBehindSlack(s.flushEvery, &server.License{LeaseTTL: time.Hour}) // rebuilt leases get it (live.go)
	tie := now.Add(-time.Minute).Truncate(time.Second)

	var (
		licenses             []string
		ids, lics            []string
		hbs, dls             []time.Time
		want                 []server.LeaseRef
		staleOnly            []string
		total, wantLiveAfter int
	)
	for i := range nLicenses {
		lic := mkLicense(t, s, tn.ID, perLicense, time.Hour)
		licenses = append(licenses, lic.ID)
		due := 0
		for j := range perLicense {
			id := fmt.Sprintf("lse_%03d_%d", i, j)
			var dl time.Time
			switch {
			case j == 0 && i%10 == 0:
				dl = tie // the same deadline in several licenses: ordered by id
			case j == 0 && i%4 != 1, j == 2 && i%3 == 0:
				dl = now.Add(-slack - time.Duration(1+(i*7+j)%50)*time.Second)
			default:
				dl = now.Add(time.Hour + time.Duration(i)*time.Second)
			}
			if live := dl.Add(slack); !live.After(now) {
				want = append(want, server.LeaseRef{LeaseID: id, LicenseID: lic.ID, ExpiresAt: live})
				due++
			} else {
				wantLiveAfter++
			}
			ids, lics, hbs, dls = append(ids, id), append(lics, lic.ID), append(hbs, dl.Add(-time.Hour)), append(dls, dl)
			total++
		}
		if due == 0 {
			staleOnly = append(staleOnly, lic.ID)
		}
	}
	slices.SortFunc(want, live.CompareRefs)
	require.NotEmpty(t, staleOnly)
	_, err = loc.db(t).Exec(ctx, `INSERT INTO sessions (id, license_id, tenant_id, token_hash, fingerprint, dedupe_key,
			acquired_at, last_heartbeat_at, expires_at)
		SELECT v.id, v.lic, $5, 'h-' || v.id, 'fp-' || v.id, 'fp-' || v.id, v.hb, v.hb, v.dl
		FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) AS v(id, lic, hb, dl)`,
		ids, lics, hbs, dls, tn.ID)
	require.NoError(t, err)
	for _, id := range licenses {
		require.NoError(t, s.ensureLive(ctx, id))
	}
	// Licenses without due leases whose hint came anyway (their leases
	// were renewed since it was set).
	for _, id := range staleOnly {
		s.live.LowerHint(ctx, id, timeUS(now.Add(-time.Second)))
	}

	all, err := s.DueLeases(ctx, nil, 10_000)
	require.NoError(t, err)
	require.Equal(t, want, all)
	for _, size := range []int{1, 7, 64, len(want) - 1, len(want)} {
		var got []server.LeaseRef
		var cursor *server.LeaseRef
		for {
			page, err := s.DueLeases(ctx, cursor, size)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), size)
			got = append(got, page...)
			if len(page) < size {
				break
			}
			cursor = &page[len(page)-1]
		}
		require.Equal(t, want, got, "pages of %d", size)
	}

	// Batches in deadline order span many licenses; two cleaners at once,
	// on two instances, released together: every lease is recorded by
	// exactly one of them.
	cleaners := []*Store{s, loc.open(t, nil)}
	t.Cleanup(func() { _ = cleaners[1].Close() })
	pass := func(c *Store) ([]server.Lease, error) {
		var g errgroup.Group
		g.SetLimit(4)
		batches := make([][]server.Lease, (len(want)+24)/25)
		for b := range batches {
			batch := want[b*25 : min(len(want), (b+1)*25)]
			g.Go(func() error {
				var err error
				batches[b], err = c.ExpireLeases(ctx, batch)
				return err
			})
		}
		err := g.Wait()
		return slices.Concat(batches...), err
	}
	var (
		expired [2][]server.Lease
		errs    [2]error
		done    sync.WaitGroup
	)
	start := make(chan struct{})
	for i, c := range cleaners {
		done.Go(func() {
			<-start
			expired[i], errs[i] = pass(c)
		})
	}
	close(start)
	done.Wait()
	require.NoError(t, errors.Join(errs[:]...))
	both := slices.Concat(expired[0], expired[1])
	require.ElementsMatch(t, refIDs(want), leaseIDs(both), "each due lease recorded once, by one of the cleaners")
	for _, l := range both {
		require.Equal(t, server.LeaseExpired, l.State)
	}
	t.Logf("the two cleaners recorded %d and %d leases", len(expired[0]), len(expired[1]))
	later, err := pass(s)
	require.NoError(t, err)
	require.Empty(t, later, "a later pass records nothing again")

	var active, cleanups int
	require.NoError(t, loc.db(t).QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE state = 'active'),
		(SELECT count(*) FROM cleanup_events)`).Scan(&active, &cleanups))
	require.Equal(t, wantLiveAfter, active)
	require.Equal(t, len(want), cleanups)
	_, rdb := testServers(t)
	var held, expiring int64
	for _, id := range licenses {
		k := loc.license(id)
		held += rdb.ZCard(ctx, k[2]).Val()
		expiring += rdb.HLen(ctx, k[5]).Val()
	}
	require.EqualValues(t, wantLiveAfter, held)
	require.Zero(t, expiring)

	// Nothing due any more, and every hint moved past now.
	again, err := s.DueLeases(ctx, nil, 100)
	require.NoError(t, err)
	require.Empty(t, again)
	var hints []redis.Z
	for k := range live.HintShards {
		part, err := rdb.ZRangeByScoreWithScores(ctx, s.live.Keys().ExpiryShard(k)[0], &redis.ZRangeBy{Min: "-inf", Max: "+inf"}).Result()
		require.NoError(t, err)
		for _, h := range part {
			require.Equal(t, k, live.HintShardOf(h.Member.(string)), "the hint of %s is in its piece", h.Member)
		}
		hints = append(hints, part...)
	}
	require.Len(t, hints, nLicenses)
	firstDeadline := map[string]int64{}
	for i := range ids {
		if d := timeUS(dls[i].Add(slack)); d > timeUS(now) {
			firstDeadline[lics[i]] = cmp.Or(min(firstDeadline[lics[i]], d), d)
		}
	}
	for _, h := range hints {
		lic := h.Member.(string)
		require.Equal(t, strconv.FormatInt(firstDeadline[lic], 10), strconv.FormatInt(int64(h.Score), 10),
			"hint of %s: its earliest deadline", lic)
	}
}
