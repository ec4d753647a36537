// Command mutants applies hand-made mutants to a copy of the tree, one at
// a time, runs the tests that should catch each, and prints which were
// killed. They are the faults that matter most for seatd's invariants and
// that a generic mutation tool does not make (Lua scripts, SQL guards).
// `make mutate` runs it after gremlins; see the release checklist, docs/development/before-a-release.md.
//
//	go run ./scripts/mutants            # every mutant
//	go run ./scripts/mutants -run flush # those whose name contains "flush"
//	go run ./scripts/mutants -reverse   # every mutant, last to first
//	go run ./scripts/mutants -sample 80 -pkg ./server/distributed
//	                                    # 80 of gremlins' mutants, at random
//	go run ./scripts/mutants -sample 80 \
//	  -pkg ./server/distributed,./server/distributed/record,./server/distributed/live \
//	  -tests ./server/distributed/      # mutants of three packages, each also
//	                                    # run against the distributed tests
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// mutant replaces one exact piece of a file (it must occur exactly once).
type mutant struct {
	name     string
	file     string
	old, new string
	pkgs     []string // test packages that must catch it
}

// alsoChange holds a second change, in the same file, of a mutant that
// needs two.
var alsoChange = map[string][2]string{
	"ExpireSessions: state guards dropped": {
		"FROM v, locked WHERE s.id = v.id AND s.id = locked.id AND s.state = 'active'",
		"FROM v, locked WHERE s.id = v.id AND s.id = locked.id",
	},
}

// runOnly names the tests (go test -run) that run against a mutant whose
// package's other tests do not bear on it and take long: the e2e
// package's, each of which starts seatd processes (they run with a longer
// timeout: a slow machine must not pass for a killed mutant).
var runOnly = map[string]string{
	"policy.lua: a cap allows one more than its limit (three instances)":    "^TestDistributedPolicyThreeInstances$",
	"policy.lua: a non-member takes a reserved seat (three instances)":      "^TestDistributedPolicyThreeInstances$",
	"policy.lua: a cap allows one more than its limit (the fault campaign)": "^TestChaos$",
}

// The invariants' tests of distributed mode are in server/distributed: its
// tests exercise the record (server/distributed/record, PostgreSQL) and the
// live state (server/distributed/live, Redis) through the Store, so the
// mutants of those two packages run them too.
var (
	distributed = []string{"./server/distributed/"}
	embedded    = []string{"./server/embedded/"}
	leader      = []string{"./server/leader/"}
	cleanup     = []string{"./server/cleanup/"}
	liveScripts = []string{"./server/distributed/live/"} // the scripts' own tests, one run at a time
	service     = []string{"./server/service/"}
	client      = []string{"./client/"}
	e2e         = []string{"./e2e/"} // with runOnly
	grpcapi     = []string{"./server/grpcapi/"}
	domain      = []string{"./server/", "./server/storetest/"} // the rules of grants.go; the suite's reference store
)

var mutants = []mutant{
	{"grants: the pick order ignores expiry", "server/grants.go",
		"	if c := cmpExpiry(a.ExpiresAt, b.ExpiresAt); c != 0 {", "	if c := 0; c != 0 {", domain},
	{"grants: versions compared as text", "server/grants.go",
		"	if c := cmp.Compare(len(x), len(y)); c != 0 {", "	if c := 0; c != 0 {", domain},
	{"grants: a grant covers one version less", "server/grants.go",
		"CompareVersions(version, g.Version) <= 0", "CompareVersions(version, g.Version) < 0", domain},
	{"policy: a cap allows one more than its limit", "server/policy.go",
		"		if in := caps[c.Key]; in >= c.Limit {", "		if in := caps[c.Key]; in > c.Limit {", domain},
	{"policy: a non-member may take a reserved seat", "server/policy.go",
		"	case n+unused < limit:", "	case n < limit:", domain},
	{"policy: an exclude rule never matches", "server/policy.go",
		"		if r := &fr.exclude[i]; r.matches(id.User, host) {", "		if r := &fr.exclude[i]; false && r.matches(id.User, host) {", domain},
	{"policy: a license change may leave its policy invalid", "server/policy.go",
		"	if err == nil || p.Validate(prev, groups) != nil {", "	if true || err == nil || p.Validate(prev, groups) != nil {", domain},
	// The site policy across three instances and under faults (issue
	// 27), judged from the clients' history (e2e/chaos).
	{"policy.lua: a cap allows one more than its limit (three instances)", "server/distributed/live/lua/policy.lua",
		"    if caps[k] >= c[2] then", "    if caps[k] > c[2] then", e2e},
	{"policy.lua: a non-member takes a reserved seat (three instances)", "server/distributed/live/lua/policy.lua",
		"  if take > 0 or n + unused < limit then", "  if take > 0 or n < limit then", e2e},
	{"policy.lua: a cap allows one more than its limit (the fault campaign)", "server/distributed/live/lua/policy.lua",
		"    if caps[k] >= c[2] then", "    if caps[k] > c[2] then", e2e},
	{"acquire.lua: seat check >= becomes >", "server/distributed/live/lua/acquire.lua",
		"  if n >= limit then\n    return {'EXHAUSTED'", "  if n > limit then\n    return {'EXHAUSTED'", distributed},
	{"embedded revival: < becomes <=", "server/embedded/leases.go",
		"s.idx.liveCount(lic, now.UnixNano()) < l.SeatLimit()", "s.idx.liveCount(lic, now.UnixNano()) <= l.SeatLimit()", embedded},
	{"heartbeat.lua: token check removed", "server/distributed/live/lua/heartbeat.lua",
		"  if r[TOK] ~= tok then\n    return TOKEN\n  end\n  if r[LINGER] then", "  if r[LINGER] then", distributed},
	{"heartbeat.lua: a borrowed lease renewed like any other", "server/distributed/live/lua/heartbeat.lua",
		"  if r[BOR] then\n    if r[DL] <= now then\n      return EXPIRED\n    end\n    return BORROWED\n  end\n", "", distributed},
	{"acquire.lua: max_borrowed_seats not enforced", "server/distributed/live/lua/acquire.lua",
		"    if conf.maxborrowed > 0 and nb + nret >= conf.maxborrowed then", "    if false then", distributed},
	{"acquire.lua: a borrow returned early no longer counts against max_borrowed_seats", "server/distributed/live/lua/acquire.lua",
		"    if conf.maxborrowed > 0 and nb + nret >= conf.maxborrowed then", "    if conf.maxborrowed > 0 and nb >= conf.maxborrowed then", distributed},
	{"heartbeat.lua: token check of an expiring lease removed", "server/distributed/live/lua/heartbeat.lua",
		"    if x[TOK] ~= tok then\n      return TOKEN\n    end\n    if x[LINGER] then", "    if x[LINGER] then", distributed},
	{"EndLease: state = 'active' guard dropped", "server/distributed/record/sessions.go",
		"			WHERE s.id = $1 AND s.state = 'active'\n			RETURNING", "			WHERE s.id = $1\n			RETURNING", distributed},
	// Both guards (alsoChange): either alone is enough (FOR UPDATE
	// re-checks the row).
	{"ExpireSessions: state guards dropped", "server/distributed/record/sessions.go",
		"WHERE s.id IN (SELECT id FROM v) AND s.state = 'active'\n			AND (SELECT count(*) FROM licensed) >= 0",
		"WHERE s.id IN (SELECT id FROM v)\n			AND (SELECT count(*) FROM licensed) >= 0", distributed},
	{"flush: state = 'active' dropped in the write-behind UPDATE (WriteBeats)", "server/distributed/record/sessions.go",
		"WHERE s.id = v.id AND s.state = 'active' AND NOT s.lingering AND s.last_heartbeat_at < v.hb", "WHERE s.id = v.id AND NOT s.lingering AND s.last_heartbeat_at < v.hb", distributed},
	{"heartbeat: a transient rebuild error answered as LEASE_EXPIRED", "server/distributed/heartbeat.go",
		"		if err != nil {\n			return false, s.fail(\"heartbeat: build live state\", err)\n		}",
		"		if err != nil {\n			return false, server.ErrLeaseExpired\n		}", distributed},
	{"distributed ExpireLeases drops from Redis when the record fails", "server/distributed/cleanup.go",
		"		// Nothing is recorded; the leases stay in the expiring hash and\n		// the next pass records them.\n		return nil, s.fail(\"expire leases\", err)",
		"		for _, l := range ended {\n			_ = s.endLiveNow(ctx, l.LicenseID, l.IDs)\n		}\n		return nil, s.fail(\"expire leases\", err)", distributed},
	{"embedded ExpireLeases removes leases on a write error", "server/embedded/cleanup.go",
		"		return nil, s.fail(\"expire leases\", err) // nothing removed (invariant 6)",
		"		for _, r := range rs {\n			s.idx.remove(r)\n		}\n		return nil, s.fail(\"expire leases\", err)", embedded},
	{"rebuild.lua: ended leases brought back", "server/distributed/live/lua/rebuild.lua",
		"  if not ended\n    and ", "  if ", distributed},
	{"rebuild.lua: the ended leases looked up only when none are remembered", "server/distributed/live/lua/rebuild.lua",
		"local ended_any = redis.call('EXISTS', K_ENDED) == 1", "local ended_any = redis.call('EXISTS', K_ENDED) == 0", distributed},
	{"rebuild.lua: expiring leases staged", "server/distributed/live/lua/rebuild.lua",
		"local expiring_any = redis.call('EXISTS', K_EXP) == 1", "local expiring_any = false", distributed},
	{"rebuild.lua: what Redis still holds of a lease ignored", "server/distributed/live/lua/rebuild.lua",
		"local live_any = redis.call('EXISTS', K_LEASES) == 1", "local live_any = false", distributed},
	{"rebuild.lua: slack given although Redis still holds the license", "server/distributed/live/lua/rebuild.lua",
		"    elseif lost and not r[BOR] and not r[LINGER] then\n      r[DL] = r[DL] + slack", "    elseif not r[BOR] and not r[LINGER] then\n      r[DL] = r[DL] + slack", distributed},
	{"acquire.lua: a lapsed lease's seat taken without recording it", "server/distributed/live/lua/acquire.lua",
		"        displaced[#displaced + 1] = lid\n", "", distributed},
	{"heartbeat told LEASE_EXPIRED without recording the expiry", "server/distributed/heartbeat.go",
		"	case live.StatusExpired:\n		return s.observeExpiry(ctx, licenseID, leaseID)\n	case live.StatusInactive:",
		"	case live.StatusExpired:\n		return false, server.ErrLeaseExpired\n	case live.StatusInactive:", distributed},
	{"flush: ended leases not dropped from Redis", "server/distributed/flush.go",
		"	if len(ended) > 0 {\n		s.dropEndedInRecord(ctx, ended)\n	}", "	_ = ended", distributed},
	{"release acknowledged although Redis kept the lease", "server/distributed/end.go",
		"		if err := s.dropEnded(ctx, info.LicenseID, leaseID); err != nil {\n			return server.Lease{}, s.fail(\"release\", err)\n		}",
		"		_ = s.dropEnded(ctx, info.LicenseID, leaseID)", distributed},
	{"insert ignores the settings version", "server/distributed/record/commit.go",
		"AND l.live_epoch = $12 AND l.version = $13", "AND l.live_epoch = $12 AND $13::bigint IS NOT NULL", distributed},
	{"rebuild.lua: a snapshot written into another incarnation", "server/distributed/live/lua/rebuild.lua",
		" or redis.call('GET', K_INC) ~= inc then", " then", distributed},
	{"rebuild.lua: a forced rebuild leaves the old state serving while it stages", "server/distributed/live/lua/rebuild.lua",
		"  if cur[1] then\n    redis.call('DEL', K_CONF)\n  end\n", "", distributed},
	{"rebuild.lua: leases ended after they were staged switched in", "server/distributed/live/lua/rebuild.lua",
		"for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_ENDED, fmt(began), '+inf')) do", "for _, id in ipairs({}) do", distributed},
	{"rebuild.lua: an older seatd's keys not fenced off", "server/distributed/live/lua/rebuild.lua",
		"  redis.call('SET', L_CONF, FENCE)\n", "", distributed},
	{"rebuild.lua: the last call switches in with late leases not yet given the time back", "server/distributed/live/lua/rebuild.lua",
		"if redis.call('ZCOUNT', S_DL, window[1], window[2]) > nbor then", "if false then", distributed},
	{"rebuild.lua: a lease whose deadline came while the license waited is not given the time back", "server/distributed/live/lua/rebuild.lua",
		"    r[DL] = r[DL] + away\n", "    r[DL] = now + 1\n", distributed},
	{"progress.lua: a claim forgets that the rebuild before it knew Redis had lost nothing", "server/distributed/live/lua/progress.lua",
		"  redis.call('HDEL', KEYS[10], 'began')", "  redis.call('HDEL', KEYS[10], 'began', 'lost')", distributed},
	{"told LEASE_EXPIRED before Redis dropped the lease", "server/distributed/end.go",
		"	if err := s.dropEnded(ctx, licenseID, leaseID); err != nil {\n		return false, s.fail(\"record an expiry\", err)\n	}\n",
		"", distributed},
	{"acquire hands back a lease ended in the record", "server/distributed/acquire.go",
		"			if err := s.dropEnded(ctx, g.License.ID, g.LeaseID); err != nil {\n				return out, false, s.fail(\"acquire\", err)\n			}\n",
		"", distributed},
	{"a grant whose record is in doubt is taken back", "server/distributed/acquire.go",
		"	if err != nil && !record.SurelyNotWritten(err) {", "	if false {", distributed},
	{"release of a lease revoked in the record only: answered without dropping it from Redis", "server/distributed/end.go",
		"				if derr := s.dropEnded(ctx, info.LicenseID, leaseID); derr != nil {\n					return server.Lease{}, s.fail(\"release\", derr)\n				}\n",
		"", distributed},
	{"end.lua: ends remembered only for leases in the live hash (not the expiring hash)", "server/distributed/live/lua/end.lua",
		"    n = n + 1\n  end\n  n = n + redis.call('HDEL', K_EXP, id)\n  redis.call('ZADD', K_ENDED, fmt(now), id)\n",
		"    n = n + 1\n    redis.call('ZADD', K_ENDED, fmt(now), id)\n  end\n  n = n + redis.call('HDEL', K_EXP, id)\n", distributed},
	{"rebuild.lua: a borrow returned early after the snapshot stops counting", "server/distributed/live/lua/rebuild.lua",
		"    push(bors, ARGV[i + 4], id) -- returned early after the snapshot: end.lua's rule\n", "", []string{"./server/distributed/live/"}},
	{"end.lua: a borrow returned early leaves the borrowed set at once", "server/distributed/live/lua/end.lua",
		"    if r[BOR] and r[DL] > now then\n      redis.call('ZADD', K_BOR, fmt(r[DL]), id)\n    end\n", "", distributed},
	{"flush: a failed batch not put back", "server/distributed/flush.go",
		"		s.hb.putBack(pending) // what was not written\n", "", distributed},
	{"reconciliation: recorded ends not dropped from Redis", "server/distributed/cleanup.go",
		"s.sweepOrphans(ctx, now), s.dropRecordedEnds(ctx), s.prunePolicyIndexes(ctx))", "s.sweepOrphans(ctx, now), s.prunePolicyIndexes(ctx))", distributed},
	{"EndLease: the end not noted for the live state (live_ends)", "server/distributed/record/sessions.go",
		"		), noted AS (\n			INSERT INTO live_ends (lease_id, license_id) SELECT id, license_id FROM ended\n			ON CONFLICT (lease_id) DO NOTHING\n		), returned AS (",
		"		), returned AS (", append([]string{"./server/distributed/record/"}, distributed...)},
	{"group release: the ends not noted for the live state (live_ends)", "server/distributed/record/commit.go",
		"		), noted AS (\n			INSERT INTO live_ends (lease_id, license_id) SELECT id, license_id FROM ended\n			ON CONFLICT (lease_id) DO NOTHING\n		), returned AS (",
		"		), returned AS (", []string{"./server/distributed/record/"}},
	{"embedded grant does not record the lapsed leases it displaces", "server/embedded/leases.go",
		"		for _, end := range ends {\n			if _, err := endLease(tx, end); err != nil {\n				return err\n			}\n		}\n		if borrowed != nil {",
		"		if borrowed != nil {", embedded},
	{"elector: the leader is handed its parent context, not the leadership's", "server/leader/elector.go",
		"		e.cfg.OnElected(leadCtx)\n", "		e.cfg.OnElected(ctx)\n		_ = leadCtx\n", leader},
	{"elector: a ping of the lock connection without its timeout", "server/leader/elector.go",
		"pctx, cancel := context.WithTimeout(ctx, e.cfg.PingTimeout)", "pctx, cancel := context.WithCancel(ctx)", leader},
	{"cleanup: the hard limit does not cancel a pass", "server/cleanup/cleaner.go",
		"ctx, cancel := context.WithTimeout(ctx, c.cfg.HardLimit)", "ctx, cancel := context.WithCancel(ctx)", cleanup},
	// Killed by live TestHeartbeatRunRevivesOneLapsedLeaseOnOneSeat.
	{"heartbeat.lua: no flush before a revival's seat count", "server/distributed/live/lua/heartbeat.lua",
		"    flush()\n    if live_count(now) >= conf.seats + conf.overdraft then",
		"    if live_count(now) >= conf.seats + conf.overdraft then", liveScripts},
	// Killed by live TestAcquireRunDisplacesEveryLapsedLeaseItsGrantsNeed.
	{"acquire.lua: a grant not counted among the leases of the run's next acquisitions (too few displaced)", "server/distributed/live/lua/acquire.lua",
		"  added(rec[DL])\n  total = total + 1\n", "  added(rec[DL])\n", liveScripts},
	// Killed by storetest Dedupe/LapsedLeaseOf...EndsWithItsNewLease.
	{"acquire.lua: a lapsed lease of the grant's keys left to revive", "server/distributed/live/lua/acquire.lua",
		"  for _, lid in ipairs(keyed) do", "  for _, lid in ipairs({}) do", distributed},
	{"embedded grant leaves the lapsed leases of its keys to revive", "server/embedded/leases.go",
		"		ending := append(keyed, replaced...)", "		ending := append(keyed[:0], replaced...)", embedded},
	{"embedded grant leaves the lapsed leases in its policy's way", "server/embedded/leases.go",
		"			ending = append(ending, held...)", "			ending = append(ending, held[:0]...)", embedded},
	{"embedded hands a lease back to another identity on a policy license", "server/embedded/policy.go",
		"	return t.user != req.User || !strings.EqualFold(t.hostname, req.Hostname)",
		"	return false && (t.user != req.User || !strings.EqualFold(t.hostname, req.Hostname))", embedded},
	// Killed by embedded TestCrashSlackSurvivesACleanRestart.
	{"embedded load: the crash slack not marked for the flusher", "server/embedded/load.go",
		"			s.idx.markDirty(r) // the flusher stores the new deadline\n", "", embedded},
	{"a wait not ended when its license stops being usable", "server/service/wait.go",
		"			if server.ErrorCode(err) != server.EEXHAUSTED {\n				return Grant{}, err // unknown key, inactive license, EXCLUDED...\n			}\n", "", service},
	{"client keeper mints a new idempotency key on each re-acquire try", "client/keeper.go",
		"	req := k.l.opts.named().acquireRequest(k.l.c.nonce(false)) // one acquisition, however many tries\n	for n := 1; ; n++ {\n",
		"	for n := 1; ; n++ {\n		req := k.l.opts.named().acquireRequest(k.l.c.nonce(false))\n", client},
	{"embedded RevokeUnconfirmed revokes a heartbeated lease", "server/embedded/leases.go",
		"		if l := s.idx.lease(r); l.Lingering || !server.Unconfirmed(granted, l) {", "		if l := s.idx.lease(r); l.Lingering || false && !server.Unconfirmed(granted, l) {", embedded},
	{"take.lua: takes a confirmed lease", "server/distributed/live/lua/take.lua",
		"if r[LINGER] or r[HB] > tonumber(ARGV[2]) or r[DL] > tonumber(ARGV[3]) then", "if r[LINGER] then", distributed},
	{"wait queue: every waiter looks at its place on each departure", "server/service/queuemoves.go",
		"	select {\n	case m.ch[ticket] <- struct{}{}:\n	default:\n	}\n",
		"	for _, c := range m.ch {\n		select {\n		case c <- struct{}{}:\n		default:\n		}\n	}\n", service},
	{"embedded: a borrowed lease returned early", "server/embedded/leases.go",
		"		if !s.idx.licenseOf(r).lic.AllowEarlyReturn {\n			return server.Lease{}, server.BorrowedNotReturnable(", "		if false {\n			return server.Lease{}, server.BorrowedNotReturnable(", embedded},
	{"distributed: a borrowed lease returned early", "server/distributed/end.go",
		"			if !lic.AllowEarlyReturn {\n				return server.Lease{}, server.BorrowedNotReturnable(", "			if _ = lic; false {\n				return server.Lease{}, server.BorrowedNotReturnable(", distributed},
	{"client: a certificate on the returned list still verifies offline", "client/returned.go",
		"	if l.Returned(c.LeaseID) {", "	if false && l.Returned(c.LeaseID) {", []string{"./client/"}},
	{"client: a certificate not checked against our own license key and identity", "client/certificate.go",
		"	if err := want.holder.check(c); err != nil {", "	if err := want.holder.check(c); false && err != nil {", []string{"./client/"}},
	{"RotateSigningKey: the signing keys quota not enforced", "server/service/signingkeys.go",
		"		if int64(len(published))+1 > limit {", "		if int64(len(published))+1 > limit+1_000_000 {", []string{"./server/service/"}},
	{"embedded commits go on into a data file found damaged", "server/embedded/commit.go",
		"	if d := c.health.damage(); d != nil {\n		refuse(errDamagedRefusal(d))\n		return\n	}\n	if c.failing.Load() {",
		"	if c.failing.Load() {", embedded},
	// Network limits (issue 24, items 11 and 14).
	{"a silent stream is told LEASE_EXPIRED before the expiry is recorded", "server/service/heartbeat.go",
		"	ended, err := k.s.store.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: l.ID, LicenseID: l.LicenseID, ExpiresAt: l.ExpiresAt}})",
		"	ended, err := []server.Lease{l}, error(nil)", grpcapi},
	{"a silent stream ends within its lease's revival window", "server/service/heartbeat.go",
		"if err == nil && now.Before(l.ExpiresAt.Add(lic.RevivalWindow)) {", "if err == nil && false {", grpcapi},
	{"no stream cap per client address", "server/grpcapi/limits.go",
		"	if l.byAddr[addr] >= l.perAddr {", "	if false {", grpcapi},
	{"unknown tenants on the JWKS not counted as failed lookups", "server/grpcapi/ratelimits.go",
		", server.ReasonLeaseTokenWrong, server.ReasonTenantNotFound:", ", server.ReasonLeaseTokenWrong:", grpcapi},
	{"format characters (Cf) allowed in request strings", "server/grpcapi/textrule.go",
		"		if unicode.Is(unicode.Cf, r) {", "		if false && unicode.Is(unicode.Cf, r) {", grpcapi},
}

func main() {
	only := flag.String("run", "", "run only the mutants whose name contains this")
	n := flag.String("sample", "", "run this many (or all) of gremlins' mutants of -pkg, chosen at random, instead of the hand-made ones")
	pkgs := flag.String("pkg", "./server/distributed", "the packages (comma-separated) whose files -sample mutates")
	tests := flag.String("tests", "", "test packages (comma-separated) run against every -sample mutant besides the mutated file's own package")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "the seed -sample chooses with (printed, to replay)")
	reverse := flag.Bool("reverse", false, "run the hand-made mutants last to first (a second run beside a first one covers the table in half the time; stop both where they meet)")
	flag.Parse()
	root, err := os.Getwd()
	check(err)
	work, err := os.MkdirTemp("", "seatd-mutants-")
	check(err)
	defer func() { _ = os.RemoveAll(work) }()
	check(copyTree(root, work))
	if *n != "" {
		count := -1 // all
		if *n != "all" {
			count, err = strconv.Atoi(*n)
			if err != nil || count <= 0 {
				check(fmt.Errorf("-sample %q: want a positive number or all", *n))
			}
		}
		sample(work, splitList(*pkgs), splitList(*tests), count, *seed)
		return
	}

	killed, total := 0, 0
	var survivors []string
	table := slices.Clone(mutants)
	if *reverse {
		slices.Reverse(table)
	}
	for _, m := range table {
		if *only != "" && !strings.Contains(m.name, *only) {
			continue
		}
		total++
		path := filepath.Join(work, m.file)
		orig, err := os.ReadFile(path)
		check(err)
		mutated, err := m.apply(string(orig))
		if err != nil {
			fmt.Printf("STALE    %s: %v\n", m.name, err)
			survivors = append(survivors, m.name+" (stale)")
			continue
		}
		check(os.WriteFile(path, []byte(mutated), 0o644))
		start := time.Now()
		args := []string{"test", "-count=1", "-timeout", "10m"}
		if run, ok := runOnly[m.name]; ok {
			args = []string{"test", "-count=1", "-timeout", "45m", "-run", run}
		}
		cmd := exec.Command("go", append(args, m.pkgs...)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		check(os.WriteFile(path, orig, 0o644))
		switch {
		case err != nil && buildFailed(out):
			// A mutant that does not compile proves nothing about the tests.
			survivors = append(survivors, m.name+" (does not build)")
			fmt.Printf("BROKEN   %s: the mutated code does not build\n%s\n", m.name, out)
		case err != nil && strings.Contains(string(out), "FAIL"):
			killed++
			fmt.Printf("KILLED   %s (%v) by %s\n", m.name, time.Since(start).Round(time.Second), failedTests(out))
		default:
			survivors = append(survivors, m.name)
			fmt.Printf("SURVIVED %s (%v)\n", m.name, time.Since(start).Round(time.Second))
		}
	}
	fmt.Printf("\nhand mutants: %d of %d killed\n", killed, total)
	for _, s := range survivors {
		fmt.Println("  survived:", s)
	}
	if killed != total {
		os.Exit(1)
	}
}

// apply makes m's change (and its alsoChange, if any) to text, the
// content of m.file. Each text to replace must occur exactly once: an
// error says which does not.
func (m mutant) apply(text string) (string, error) {
	mutated, err := replaceOnce(text, m.old, m.new)
	if err != nil {
		return text, fmt.Errorf("in %s, the text to mutate %w", m.file, err)
	}
	if second, ok := alsoChange[m.name]; ok {
		if mutated, err = replaceOnce(mutated, second[0], second[1]); err != nil {
			return text, fmt.Errorf("in %s, alsoChange's text %w", m.file, err)
		}
	}
	return mutated, nil
}

// replaceOnce replaces old, which must occur exactly once, by new.
func replaceOnce(text, old, new string) (string, error) {
	if n := strings.Count(text, old); n != 1 {
		return text, fmt.Errorf("occurs %d times, not once: %q", n, old)
	}
	return strings.Replace(text, old, new, 1), nil
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failedTests names the top-level tests go test's output says failed (the
// first three), or says none did (a panic, a timeout).
func failedTests(out []byte) string {
	var names []string
	for _, m := range failLine.FindAllSubmatch(out, -1) {
		name := string(m[1])
		if !strings.Contains(name, "/") && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	switch {
	case len(names) == 0:
		return "no test failure listed (a panic or a timeout?)"
	case len(names) > 3:
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// buildFailed tells whether go test's output says a package or its tests
// did not build (then the tests did not run at all).
func buildFailed(out []byte) bool {
	return bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))
}

// copyTree copies the source tree (not .git, not bin/) to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && (rel == ".git" || rel == "bin" || strings.HasPrefix(rel, "seatd-data")) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
}
