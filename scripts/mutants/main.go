// Command mutants applies hand-made mutants to a copy of the tree, one at
// a time, runs the tests that should catch each, and prints which were
// killed. They are the faults that matter most for seatd's invariants and
// that a generic mutation tool does not make (Lua scripts, SQL guards).
// `make mutate` runs it after gremlins; see the README's release checklist.
//
//	go run ./scripts/mutants            # every mutant
//	go run ./scripts/mutants -run flush # those whose name contains "flush"
//	go run ./scripts/mutants -sample 80 -pkg ./server/distributed
//	                                    # 80 of gremlins' mutants, at random
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	"ExpireLeases: state guards dropped": {
		"FROM v, locked WHERE s.id = v.id AND s.id = locked.id AND s.state = 'active'",
		"FROM v, locked WHERE s.id = v.id AND s.id = locked.id",
	},
}

var (
	distributed = []string{"./server/distributed/"}
	embedded    = []string{"./server/embedded/"}
)

var mutants = []mutant{
	{"acquire.lua: seat check >= becomes >", "server/distributed/lua/acquire.lua",
		"  if n >= limit then\n    return {'EXHAUSTED'", "  if n > limit then\n    return {'EXHAUSTED'", distributed},
	{"embedded revival: < becomes <=", "server/embedded/leases.go",
		"e.lic.liveCount(now) < l.SeatLimit()", "e.lic.liveCount(now) <= l.SeatLimit()", embedded},
	{"heartbeat.lua: token check removed", "server/distributed/lua/heartbeat.lua",
		"  if r[TOK] ~= tok then\n    return TOKEN\n  end\n  if r[DL] <= now then", "  if r[DL] <= now then", distributed},
	{"heartbeat.lua: token check of an expiring lease removed", "server/distributed/lua/heartbeat.lua",
		"    if x[TOK] ~= tok then\n      return TOKEN\n    end\n    return EXPIRED", "    return EXPIRED", distributed},
	{"endLease: state = 'active' guard dropped", "server/distributed/leases.go",
		"			WHERE s.id = $1 AND s.state = 'active'\n			RETURNING", "			WHERE s.id = $1\n			RETURNING", distributed},
	// Both guards (alsoChange): either alone is enough (FOR UPDATE
	// re-checks the row).
	{"ExpireLeases: state guards dropped", "server/distributed/cleanup.go",
		"WHERE s.id IN (SELECT id FROM v) AND s.state = 'active'\n			AND (SELECT count(*) FROM licensed) >= 0",
		"WHERE s.id IN (SELECT id FROM v)\n			AND (SELECT count(*) FROM licensed) >= 0", distributed},
	{"flush: state = 'active' dropped in the write-behind UPDATE", "server/distributed/flush.go",
		"WHERE s.id = v.id AND s.state = 'active' AND s.last_heartbeat_at < v.hb", "WHERE s.id = v.id AND s.last_heartbeat_at < v.hb", distributed},
	{"heartbeat: a transient rebuild error answered as LEASE_EXPIRED", "server/distributed/leases.go",
		"		if err != nil {\n			return false, s.fail(\"heartbeat: build live state\", err)\n		}",
		"		if err != nil {\n			return false, server.ErrLeaseExpired\n		}", distributed},
	{"distributed ExpireLeases drops from Redis when the record fails", "server/distributed/cleanup.go",
		"		// Nothing is recorded; the leases stay in the expiring hash and\n		// the next pass records them.\n		return nil, s.fail(\"expire leases\", err)",
		"		for i := range ids {\n			_ = s.endLiveNow(ctx, owners[i], ids[i:i+1])\n		}\n		return nil, s.fail(\"expire leases\", err)", distributed},
	{"embedded ExpireLeases removes leases on a write error", "server/embedded/cleanup.go",
		"		return nil, s.fail(\"expire leases\", err) // nothing removed (invariant 6)",
		"		for _, e := range es {\n			s.idx.removeLease(e)\n		}\n		return nil, s.fail(\"expire leases\", err)", embedded},
	{"rebuild.lua: ended leases brought back", "server/distributed/lua/rebuild.lua",
		"if not redis.call('ZSCORE', K_ENDED, id) and redis.call('HEXISTS', K_EXP, id) == 0 then",
		"if redis.call('HEXISTS', K_EXP, id) == 0 then", distributed},
	{"rebuild.lua: slack given although Redis still holds the license", "server/distributed/lua/rebuild.lua",
		"    elseif lost then\n      r[DL] = r[DL] + slack", "    else\n      r[DL] = r[DL] + slack", distributed},
	{"acquire.lua: a lapsed lease's seat taken without recording it", "server/distributed/lua/acquire.lua",
		"        displaced[#displaced + 1] = lid\n", "", distributed},
	{"heartbeat told LEASE_EXPIRED without recording the expiry", "server/distributed/leases.go",
		"	case \"EXPIRED\":\n		return s.observeExpiry(ctx, licenseID, leaseID)\n	case \"INACTIVE\":",
		"	case \"EXPIRED\":\n		return false, server.ErrLeaseExpired\n	case \"INACTIVE\":", distributed},
	{"flush: ended leases not dropped from Redis", "server/distributed/flush.go",
		"	if len(ended) > 0 {\n		s.dropEndedInRecord(ctx, ended)\n	}", "", distributed},
	{"release acknowledged although Redis kept the lease", "server/distributed/leases.go",
		"		if err := s.dropEnded(ctx, info.LicenseID, leaseID); err != nil {\n			*out = server.Lease{}\n			return s.fail(\"release\", err)\n		}",
		"		_ = s.dropEnded(ctx, info.LicenseID, leaseID)", distributed},
	{"insert ignores the settings version", "server/distributed/commit.go",
		"AND l.live_epoch = $12 AND l.version = $13", "AND l.live_epoch = $12 AND $13::bigint IS NOT NULL", distributed},
	{"rebuild.lua: a snapshot written into another incarnation", "server/distributed/lua/rebuild.lua",
		" or redis.call('GET', KEYS[8]) ~= ARGV[14] then", " then", distributed},
	{"told LEASE_EXPIRED before Redis dropped the lease", "server/distributed/leases.go",
		"	if err := s.dropEnded(ctx, licenseID, leaseID); err != nil {\n		return false, s.fail(\"record an expiry\", err)\n	}\n",
		"", distributed},
	{"acquire hands back a lease ended in the record", "server/distributed/leases.go",
		"			if err := s.dropEnded(ctx, g.license.ID, g.leaseID); err != nil {\n				return out, false, s.fail(\"acquire\", err)\n			}\n",
		"", distributed},
	{"a grant whose record is in doubt is taken back", "server/distributed/leases.go",
		"	if err != nil && !surelyNotWritten(err) {", "	if false {", distributed},
	{"embedded grant does not record the lapsed leases it displaces", "server/embedded/leases.go",
		"			for _, end := range ends {\n				if _, err := endLease(tx, end); err != nil {\n					return err\n				}\n			}\n			return insertLease(tx, rec)",
		"			return insertLease(tx, rec)", embedded},
}

func main() {
	only := flag.String("run", "", "run only the mutants whose name contains this")
	n := flag.Int("sample", 0, "run this many of gremlins' mutants of -pkg, chosen at random, instead of the hand-made ones")
	pkg := flag.String("pkg", "./server/distributed", "the package -sample mutates")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "the seed -sample chooses with (printed, to replay)")
	flag.Parse()
	root, err := os.Getwd()
	check(err)
	work, err := os.MkdirTemp("", "seatd-mutants-")
	check(err)
	defer func() { _ = os.RemoveAll(work) }()
	check(copyTree(root, work))
	if *n > 0 {
		sample(work, *pkg, *n, *seed)
		return
	}

	killed, total := 0, 0
	var survivors []string
	for _, m := range mutants {
		if *only != "" && !strings.Contains(m.name, *only) {
			continue
		}
		total++
		path := filepath.Join(work, m.file)
		orig, err := os.ReadFile(path)
		check(err)
		mutated, ok := apply(string(orig), m.old, m.new)
		if second, has := alsoChange[m.name]; ok && has {
			mutated, ok = apply(mutated, second[0], second[1])
		}
		if !ok {
			fmt.Printf("STALE    %s: the text to mutate does not occur exactly once in %s\n", m.name, m.file)
			survivors = append(survivors, m.name+" (stale)")
			continue
		}
		check(os.WriteFile(path, []byte(mutated), 0o644))
		start := time.Now()
		cmd := exec.Command("go", append([]string{"test", "-count=1", "-timeout", "10m"}, m.pkgs...)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		check(os.WriteFile(path, orig, 0o644))
		switch {
		case err != nil && strings.Contains(string(out), "FAIL"):
			killed++
			fmt.Printf("KILLED   %s (%v)\n", m.name, time.Since(start).Round(time.Second))
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

// apply replaces old, which must occur exactly once, by new.
func apply(text, old, new string) (string, bool) {
	if strings.Count(text, old) != 1 {
		return text, false
	}
	return strings.Replace(text, old, new, 1), true
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
