// Package distributed is seatd's storage backend for many instances:
// PostgreSQL is the system of record (tenants, API keys, licenses,
// sessions, usage and cleanup events, audit log) and Redis holds the live
// leases, the hot path of acquire, heartbeat and release. It implements
// server.Store and passes the conformance suite (server/storetest)
// unchanged.
//
// Three packages, one job each: record (every SQL statement), live (the
// Redis key layout, the Lua scripts, the expiry hint) and this one, which
// coordinates them and whose files read as the protocol between them:
//
//	acquire.go    grant -> record (take back a grant the record refused)
//	heartbeat.go  heartbeat -> write-behind (flush.go writes it to the record)
//	end.go        end -> record, then live; an observed end is final
//	rebuild.go    loss -> rebuild: the live state built from the record
//	cleanup.go    due (live) -> expire (live) -> record -> forget (live)
//	licenses.go   settings: record, then copied into the live state
//	grants.go     feature grants: pools of a license (below)
//	features.go   a feature's acquisition: one script over its grants' pools
//	views.go      the record, overlaid with the newer live values
//
// # Redis layout
//
// Keys start with Options.RedisKeyPrefix (P). Each license has its own keys,
// hash-tagged by its id so that every script touches one slot; their names
// carry the layout (v2: live/keys.go). A grant <lic>.<hex> has the same
// keys as P{lic}:<hex>:v2:... (its license's slot):
//
//	P{lic}:v2:conf       hash  settings: seats, overdraft, ttl, revival,
//	                           active, exp, strategy, tenant, json (the
//	                           whole license), version, epoch, deleted,
//	                           maxborrow, maxborrowed, starts (a grant's
//	                           pool: refuses acquisitions before it),
//	                           policy, linger (how long a released seat
//	                           of the pool lingers, µs: check.lua)
//	P{lic}:v2:leases     hash  lease id -> cmsgpack {token hash, acquired,
//	                           deadline - last heartbeat, deadline, dedupe
//	                           key, idem key, token seq, borrowed,
//	                           lingering}
//	P{lic}:v2:deadlines  zset  lease id -> deadline
//	P{lic}:v2:dedupe     hash  dedupe key -> lease id
//	P{lic}:v2:idem       hash  idempotency key -> lease id
//	P{lic}:v2:expiring   hash  lease id -> record, for leases taken out of
//	                           the live state whose expiry is not yet
//	                           recorded
//	P{lic}:v2:ended      zset  lease id -> when end.lua removed it (kept
//	                           60 s, so that a racing rebuild cannot bring
//	                           it back)
//	P{lic}:v2:borrowed   zset  lease id -> deadline, of the borrowed leases
//	                           (counted against max_borrowed_seats)
//	P{lic}:v2:incarnation string  random, set once (state.lua): a rebuild
//	                           writes only into the keys it read them from
//	P{lic}:v2:stage:progress hash  the rebuild under way: epoch, whether
//	                           Redis lost the state, began, last progress
//	P{lic}:v2:stage:leases, :deadlines, :dedupe, :idem, :borrowed  what it
//	                           has written so far, switched in at its end
//
// A lease id is kept as its 12 bytes (a canonical id, live/ids.go) and a
// token hash as the first 16 bytes of the SHA-256 (128 bits; the record
// keeps all 32): at a million leases the text forms were a quarter of the
// live state's memory. A license's first rebuild fences off the keys of
// layout 1 (P{lic}:conf ..., an older seatd's): the old settings hash
// becomes a string, on which every script of an older seatd fails
// (WRONGTYPE: it answers UNAVAILABLE, its clients retry elsewhere), its
// leases are dropped and the ends it remembered since the snapshot are
// carried over; ends it records during the rebuild are taken out of the
// staging too. So during a rolling upgrade a license is served by one
// layout at a time (docs/guides/upgrades.md, "Upgrading distributed mode").
//
// and the expiry hint, split in 16 pieces i (each its own slot, live/keys.go):
// P{expiry:i}:due (zset license id -> a time at or before its earliest
// deadline) and P{expiry:i}:gen (hash license id -> hint generation). Times
// are unix microseconds, the precision PostgreSQL keeps, so values round-
// trip exactly. Every script (lua/*.lua, run with EVALSHA and an EVAL
// fallback) reads the clock with redis.call('TIME'): one clock for every
// instance. PostgreSQL timestamps of lease events are the times the scripts
// returned; admin-only changes use now() in SQL.
//
// # Feature grants (invariant 12)
//
// A grant is a pool of its own, kept exactly as a license: a row of
// licenses (parent_id its license; migration 00010) holding its pool's
// settings (server.Grant.Pool: its own seats, dates and borrowing limits,
// copies of the license's TTL, strategy, active flag ... which
// UpdateLicense rewrites, versions bumped, and pushes to every pool), and
// a live state of its own keyed by the grant's id. Its keys carry the
// license's hash tag, P{lic}:<hex>:v2:conf ..., so that all pools of a
// license share a slot. So every per-license step (heartbeat, end,
// expire, due, hint, rebuild, take, tombstone, reconcile, syncConf,
// adopt) works per pool unchanged, and a lease of a grant has its pool's
// id as LicenseID. A feature's acquisition (features.go) takes the
// license's grants (cached per process with the license's settings
// version, which every grant change bumps: grants.go says how they stay
// fresh), the covering ones in pick order (License.GrantsFor), and runs
// acquire_pools.lua once over their pools' keys and the license's
// settings: it refuses a stale grants version (STALE: read them again),
// names the pools without live state (NOCONF: each is built, as
// ensureLive does), then hands back a live lease of the request's keys in
// any usable pool, or grants in the first usable pool with a free seat,
// with acquire.lua's displacements (the lapsed leases of the request's
// keys in any pool too) and borrow checks (a borrow must end by the
// pool's expiry, conf 'exp'); else the sums over the usable pools
// (EXHAUSTED), or why none is usable (inactive, not started: conf
// 'starts', expired). Every pool is checked once a run (live state,
// deleted, strategy, and whether its key hashes hold anything: a pool
// without keys is not looked up), but a pool's settings are read, and it
// is judged usable, only when an acquisition looks at it: as far down
// the pick order as the pick goes, and the pool of a live lease of its
// keys; the reply carries the settings of those pools only. A request no grant covers is judged on the
// license's live state first (usable.lua, at Redis TIME: inactive or
// expired says so; only that refused path pays the round trip). The grant is recorded as any (insert checks
// the pool row's epoch and version). Base-pool calls are unchanged
// (acquire.lua); a feature's acquisitions go through the same batching,
// those on the same pools at the same grants version sharing a run
// (BenchmarkHotPath's feature-* rows: a license of 50 grants).
//
// # Site policies (invariant 13)
//
// A license's policy (server.Policy) is a jsonb column of its row with the
// groups it names copied in; policy_gen, on its row and its grants', is
// the version at which it was switched on (migration 00011,
// record/policy.go). A change of the policy, or of a group it names,
// bumps the license's version in the same transaction and is pushed as a
// grant change is. The live settings of every pool of such a license say
// its generation ('policy') and hold the revival window negated: heartbeat.lua
// leaves the revival of a lapsed lease to revive.lua, which revives it only
// if the policy would grant its client a seat now (the reservation it may
// take being its own), judged as an acquisition is. acquire.lua answers
// POLICY for such a license, whose acquisitions, base pool (alone in its
// scope) included, all run acquire_pools.lua (policy.go): the process
// decides each one (CompiledPolicy.Decide, compiled once per license
// version) and passes the decision; the script, after handing back a live
// lease of the request's keys (unjudged), judges it as server.Judge does
// over the usable pools that may grant, counting from the policy index
// ({lic}:v2:pol:index: who holds each live lease of the scope, and the
// reservation it took) the leases of every grant of the feature; a grant
// adds its holder's members (a cap of a group as a whole is judged on
// the scope's holders of its kind, one ZLEXCOUNT, and the decision leaves
// the group's members out until that bound reaches the cap: the script
// then answers NEEDNAMES, writing nothing, and the license version's
// decisions carry them from then on), Lease.Reservation is recorded with the lease
// (sessions.reservation), and a refusal's counts come back so that
// server.Judge gives the embedded store's error. A grant also ends the
// lapsed leases that, back, would break its caps or reservations
// (policy.lua policy_ends: they may come back unjudged after a loss of
// Redis), recorded expired as the seat count's displaced leases are;
// the others keep their chance to revive. A version in Redis other
// than the one decided at answers STALE. Members of ended leases are
// removed as counts meet them and by the leader (prunePolicyIndexes). The
// index is trusted only while its marker ({lic}:v2:pol:built) holds the
// license's policy generation: a loss of Redis or a rebuild of any pool
// of the license (rebuild.lua) takes it away, and nothing is granted on
// the license until it is built again from the record (buildPolicyIndex:
// the active sessions of all its pools, read under their row locks so
// that no insert in flight is missed; a build begun before a loss or a
// rebuild starts again). A build adds to what the index holds.
//
// On a scope the policy has rules of, a live lease of the request's keys
// is handed back only to its own user and host (server.LeaseStore): every
// lease has an identity member (scope, 'i', user and lower-cased host,
// empty ones too) that the script looks up with one ZSCORE. For another
// identity the lease's seat counts free (in its pool's count and in the
// policy's counts) and the acquisition is judged as new; a grant moves
// the old lease to the expiring hash in the same step (as take.lua does)
// and names it, and recordNew records it revoked, with its audit entry
// (actor "system", "lease.replace"), before the new lease's INSERT, as it
// records displaced leases expired first. A crash in between leaves it
// expiring: the cleanup records it expired. A borrowed lease is always
// handed back. An index built before identity members existed lacks
// them: its holders are replaced, not handed back, until it is rebuilt.
//
// The index never loses the member of a live lease while the pools' live
// state persists: a lease granted in Redis whose INSERT has not started
// is in no snapshot of the record, so a build could not bring its members
// back, and its caps would count it nowhere. Hence only the pool a member
// names decides: members are removed when their lease is gone from its
// pool (met by a count, or by the prune, which removes nothing while
// Redis holds another settings version of the license than the one its
// pool list was read at: a grant created since is not in the list); a
// rebuild takes the marker, never the members; a grant's tombstone leaves
// the index alone (its members go as met); only the license's own
// tombstone drops it, and a switch-off drops it only in a script that
// finds the live settings without a policy (policy_drop.lua: a late drop
// cannot take the index of a policy switched on again).
//
// # Invariants
//
// Seat limit (1) and expired seats never block (2): acquire.lua counts the
// live leases with ZCOUNT deadlines (now, +inf) and grants in the same
// atomic step. A lease past its deadline stops counting at its deadline,
// whether or not it was cleaned up. Heartbeats (heartbeat.lua) only renew
// a lease still in the live state, never create one; past its deadline a
// lease is revived only within the revival window and only if a seat is
// free (3). Observed ends are final (3): a call told LEASE_EXPIRED records
// the expiry first (observeExpiry), and a grant that needs the seat of a
// lapsed lease moves that lease to the expiring hash and records its
// expiry before the new lease (expireDisplaced), so that the record's
// active leases never exceed the limit and no rebuild revives them.
// Retries (4): acquire.lua hands back the live lease of the same
// idempotency key, else of the same dedupe key, with a new token; a replay
// of the script itself (same lease id and token) answers its own grant. A
// grant that takes the keys of a lapsed lease displaces that lease too
// (recorded expired like the others), so that it cannot revive beside the
// new one.
//
// # Write order
//
// Acquire: acquire.lua grants (the seat is counted at once) -> INSERT the
// session in PostgreSQL -> return. The INSERT is conditional: it selects the
// license row FOR KEY SHARE and requires it undeleted, at the epoch the
// grant was made in, and at the settings version Redis judged it by (a
// grant under settings older than the record's is never recorded; the
// caller pushes the record's settings and judges again). If it fails or inserts nothing, end.lua takes the
// grant back and the caller gets UNAVAILABLE (or NOT_FOUND for a deleted
// license). A lease handed back (token rotated) is recorded the same way
// (UPDATE ... token_seq < new seq), so the newest token survives a loss of
// Redis.
//
// Heartbeat: heartbeat.lua renews in Redis -> the new values go to an
// in-process buffer -> the flusher writes the buffer every
// HeartbeatFlushInterval with one UPDATE ... FROM unnest(...) per batch,
// moving last_heartbeat_at only forward and touching only active sessions.
// The statement also returns the leases of the batch that the record says
// ended; the flusher drops them from Redis (the record is the truth: an
// ended lease stops heartbeating within a flush interval). Close flushes.
// It changes no indexed column of sessions, and the table's pages keep
// room (fillfactor 80): every heartbeat written is a HOT update, one new
// row version on the row's own page and no index entry
// (migrations/00006_hot_heartbeats.sql). No index may cover
// last_heartbeat_at or expires_at: a million leases heartbeat tens of
// thousands of times a second, and each such index would cost every one
// of those writes an entry in every index of the table.
//
// Release under a linger (server/linger.go; the pool's live settings hold
// 'linger', copied from licenses.linger_us, migration 00013): check.lua
// judges the token and liveness and, in the same step, lingers the lease
// (marked lingering, last heartbeat now, deadline now + the linger) ->
// LingerSession records it (sessions.lingering, last_heartbeat_at,
// expires_at, only while the record's token seq is not past the one
// lingered: a later hand-back wins) -> the caller is told. Nothing leaves
// the live state: the lease counts until its new deadline. heartbeat.lua
// and revive.lua answer a lingering lease released (changing nothing);
// a hand-back (acquire.lua, acquire_pools.lua) takes it back and says so,
// and RecordRenewal clears sessions.lingering and audits lease.reclaim;
// expire.lua hands a lapsed one to the cleaner with its lingering flag,
// and ExpireSessions records it released (usage event, no cleanup event)
// if the record or the live state says it lingered. WriteBeats never
// touches a lingering session; a rebuild stages a recorded linger as it
// is (no slack).
//
// Release / Revoke: check.lua judges (token, still live; Revoke reads the
// live values with peek.lua) -> one statement ends the session (UPDATE ...
// WHERE state = 'active' RETURNING), inserts its usage event (ON
// CONFLICT (lease_id) DO NOTHING) and notes the end for the live state
// (live_ends) -> end.lua removes the lease from Redis -> only then the
// caller is told (UNAVAILABLE if end.lua failed). The leader's
// reconciliation runs end.lua again for the noted ends and clears the
// notes (see Reconciliation): the repair when nobody retries.
// Of two racing ends, the row lock lets one win; the other sees the lease
// ended and answers accordingly.
//
// RevokeUnconfirmed (a waiter's grant never heartbeated): take.lua moves
// the lease into the expiring hash only while its heartbeat and deadline
// are the grant's, in one step with every heartbeat -> the revocation is
// recorded -> end.lua. A crash in between, or a failed record write,
// leaves it expiring (no seat, no heartbeat): the next pass records it as
// expired.
//
// Expire (ExpireLeases): per license, expire.lua moves the named leases
// still past their deadline from the live state into the expiring hash and
// returns them (with those already there) -> one statement records all of
// them: UPDATE sessions ... WHERE id = ANY AND state = 'active' RETURNING,
// and from the returned rows the usage events, cleanup events (both ON
// CONFLICT (lease_id) DO NOTHING) and audit entries -> after it commits,
// end.lua drops them from the expiring hash. DueLeases lists expiring
// leases too, so a failed record is retried by the next pass.
//
// DeleteLicense: one transaction locks the license row FOR UPDATE, revokes
// its active sessions (usage events, audit), marks it deleted -> then
// tombstone.lua drops the live state and marks the settings deleted with an
// epoch no rebuild can beat (the delete answers UNAVAILABLE if it fails;
// the leader's syncConf tombstones every deleted license Redis still
// serves). UpdateLicense: a transaction (row lock FOR NO
// KEY UPDATE, version + 1) -> setconf.lua copies the settings into an
// existing live state if they are newer. If Redis refuses that copy, the
// flush loop pushes the license's recorded settings again every tick until
// it takes, and the leader's reconciliation compares every license's
// settings version in Redis with the record, in case the process that
// made the change died first.
//
// # Group commit (internal/groupcommit, live/batch.go, record/commit.go)
//
// Under load the hot path shares its round trips. Calls of acquire.lua,
// acquire_pools.lua, heartbeat.lua, check.lua and end.lua that wait at the same moment go to
// Redis as one pipeline, with one script run per license carrying all of
// that license's calls (the script judges each in turn, exactly as if it
// ran alone: every grant still counts the seats atomically, in one script,
// after the grants before it). The sessions that concurrent acquisitions
// record are inserted by one statement (INSERT ... SELECT FROM unnest,
// with insertOneSQL's license lock and epoch check per row), and the
// sessions that concurrent releases end are ended by one statement (with
// endLease's state check per row and the usage events), each its own
// transaction, committed before any of its callers returns. A row a group
// statement did not write (an outdated epoch, a taken id, a lease already
// ended, a row another transaction holds: the group skips those instead
// of waiting) is tried again alone, which gives its caller the answer it
// would have had alone; a group statement PostgreSQL refused (rolled back)
// is tried again row by row; a group whose outcome is unknown fails all of
// its calls, as the single statements would have. No call waits for a
// timer: one batch of a kind runs at a time (a second PostgreSQL one once
// enough calls wait), and the calls that come meanwhile form the next, so
// a lone call goes out at once and batches grow with the load. The write
// order above holds for every call of a batch.
//
// # Building the live state, and Redis loss (invariant 7)
//
// The live state of a license is created only by a rebuild from
// PostgreSQL, never by writing settings alone: on its first use, and
// whenever a script finds the conf hash missing (NOCONF) because Redis
// restarted empty or lost the keys. A rebuild locks the license row FOR
// UPDATE, claims the new epoch in Redis (progress.lua: other instances wait
// for a rebuild under way instead of reading a snapshot of their own),
// bumps licenses.live_epoch, reads the active sessions and commits;
// rebuild.lua then writes the leases, unless a state of the same or a
// newer epoch is there already, a chunk of 100 per call so that a license
// of hundreds of thousands of leases holds Redis for a few milliseconds at
// a time, never for seconds. Its first call takes the settings away: every
// call on the license finds no state (NOCONF) and waits for the rebuild,
// so that no acquisition ever counts a partial lease set and no heartbeat
// renews a lease the rebuild has copied already. Each call stages its
// leases apart (P{lic}:v2:stage:*); the last one takes out of the staging
// the leases that ended meanwhile (end.lua needs no settings: a release
// that passed its check before the first call ends its lease during the
// rebuild), switches the staging keys in (UNLINK, then RENAME) and writes
// the settings. Leases whose deadline came while the settings were away
// (their heartbeats waited) get that time back, a chunk at a time, before
// the switch. A rebuild that has begun writing and makes no progress for
// 5 s is taken for dead, and one still reading its snapshot after 30 s
// (the age a snapshot may have): another instance rebuilds at a newer
// epoch; the old one, if it wakes, finds itself superseded and writes
// nothing. A claim keeps what an earlier rebuild knew of the loss: one
// that took the settings away and died leaves no absence that the next
// takes for a Redis loss. Because the lock waits for
// acquisitions in the middle of recording a lease, and their INSERT
// requires the epoch they were granted in, a lease granted by a state that
// is gone can never be recorded, and every recorded active lease is in the
// rebuilt state: the seat limit holds across a Redis restart, and old
// tokens keep working (the newest token of every lease is in PostgreSQL).
// rebuild.lua merges the snapshot with what Redis still holds: leases Redis
// holds keep their (newer) values, leases in the expiring hash or ended
// since the snapshot (P{lic}:ended) stay out — which is why a call told
// that its lease expired is told only once end.lua ran — and only when
// Redis lost the license's state do leases get server.WriteBehindSlack
// over their recorded deadline (recorded deadlines trail heartbeats not
// yet written behind). A snapshot older than 30 s is refused, and so is one
// read while the license's keys had another incarnation
// (P{lic}:incarnation, a random value state.lua sets once): Redis
// restarted empty or lost the keys since, and with them the ends
// P{lic}:ended remembered. (A Redis that comes back with older data, from
// a snapshot or a replica that missed writes, keeps the incarnation: see
// the last crash case.) Every call of a rebuild checks both. Rebuilds
// happen per license and on demand: an acquisition on a license whose
// state is missing waits for its rebuild (a few milliseconds; seconds
// for hundreds of thousands of leases) instead of failing, and other
// licenses are not held up. This replaces the single global
// epoch key of the first design, which could not tell a license that was
// rebuilt from one whose settings were written into an empty Redis.
//
// # Reconciliation (cleanup.go)
//
// The leader repairs what the expiry hint and the live state can lose, at
// most every 10 s (defaultReconcileEvery), before the first page of a
// cleanup pass, in three steps that read no index a heartbeat changes:
//
//   - Hints: each license's earliest deadline in Redis, live or expiring
//     (firsts.lua), against its hint, 10,000 licenses a pass going round
//     in id order; a hint missing or later than it was lost (a hint is
//     otherwise always at or before it) and is lowered. A
//     license with no live state whose record holds active leases (Redis
//     lost it and nothing used the license since) is built from the
//     record, at most 64 a pass, which sets its hint.
//   - Orphans: the next page of a sweep over the active sessions in id
//     order (25,000 a pass, record.ActivePage: the index
//     sessions_active_id_idx, which no heartbeat touches); of them, those
//     past their recorded deadline (at most 10,000) go to adopt.lua, which
//     hands the ones Redis holds nowhere to the cleaner. The sweep starts
//     over at the end, and on a new leader; an orphan is found within
//     (active leases / 25,000) passes of its recorded deadline.
//   - Recorded ends: the releases and revokes the record noted
//     (live_ends, written by the statement that recorded the end), in
//     batches of Options.EndRepairBatch in lease id order until one comes
//     back short: end.lua for each license's leases of the batch (a
//     lease gone already costs a lookup), then the notes are deleted. A
//     note whose end.lua failed stays for the next pass.
//
// Then the settings versions (syncConf, licenses.go).
//
// # Crash cases
//
//   - Between grant and INSERT (instance dies): the lease is in Redis only.
//     It holds its seat until its deadline (the client never got it), is
//     then due, and ExpireLeases finds no active record and drops it. A
//     retry of that client (same dedupe or idempotency key) would be handed
//     the unrecorded lease: it waits a few seconds for the record, then
//     rebuilds the license's live state from PostgreSQL (epoch + 1), which
//     drops the grant and makes sure it can never be recorded, and acquires
//     anew.
//   - INSERT outcome unknown (connection lost with the statement in
//     flight): the grant is not taken back, since the session may be
//     recorded (an active session Redis does not hold would be counted
//     again by a later rebuild, next to the grant of the client's retry).
//     The license's live state is rebuilt from the record in the
//     background (rebuildFrom): its row lock waits for the insert, the
//     grant stays if it committed and goes if not. If that fails too, the grant keeps its
//     seat until its deadline or until its client's retry is handed it
//     back and finds out (recordRenewal). An error that surely wrote
//     nothing (never sent, or refused by PostgreSQL) takes the grant back.
//   - An active session Redis does not hold all the same (a Redis that
//     failed over and lost writes): it holds no seat (heartbeats answer
//     LEASE_EXPIRED); the reconciliation's sweep finds it past its
//     recorded deadline, within one sweep of that deadline (see
//     Reconciliation), and adopt.lua hands it to the cleaner, which
//     records it as expired.
//   - Between the end of a session in PostgreSQL and end.lua (a crash, or
//     end.lua failed): the record is final, but nobody has been told: the
//     call answers only once end.lua succeeded (a retry finds the end
//     recorded and runs end.lua again). The lease lingers in Redis; if it
//     heartbeats, the next flush learns from the record that it ended and
//     drops it (flush.go); if its client acquires again and is handed it
//     back, recording the new token finds it ended and drops it
//     (recordRenewal); in any case the leader's next reconciliation finds
//     the note the record keeps of the end (live_ends) and drops it
//     (dropRecordedEnds), so that a lease that never heartbeats (a
//     borrowed one) does not hold its seat until its deadline. A deleted
//     license whose tombstone failed is
//     tombstoned by the leader's reconciliation (syncConf).
//   - Between expire.lua and the record, or the record fails: the leases
//     wait in the expiring hash (no seat, no heartbeat) and the next pass
//     records them; two cleaners record each once (row lock + state check).
//   - Flusher never runs (crash): up to HeartbeatFlushInterval of heartbeat
//     progress is missing from PostgreSQL; Redis has it. Only a Redis loss
//     at the same time would show it, and the rebuild slack covers it.
//   - Between the grant that took a lapsed lease's seat and the record of
//     that lease's expiry: the lapsed lease waits in the expiring hash (no
//     revival); if the record fails, the grant is taken back and the
//     caller gets UNAVAILABLE; the cleaner records the expiry later.
//   - Between check.lua lingering a lease and LingerSession (a crash, or
//     the record failed): the lease lingers in Redis, unrecorded, and
//     nobody was told. A retried release finds it lingering and records
//     it; one never retried lapses and is recorded released (expire.lua
//     names it lingering). A loss of Redis meanwhile brings it back from
//     the record as it was before the release (active, its slack): the
//     release, never answered, is as if it never came.
//   - Between a grant and its hint (hint.lua), or hint.lua failed: the
//     hint is lost; the reconciliation re-derives it from the license's
//     earliest deadline in Redis within 10 s (defaultReconcileEvery).
//   - Rebuild between its commit and rebuild.lua, or between two calls of
//     rebuild.lua: the settings are missing, so the next call waits for
//     the rebuild to look dead (5 s without progress once it writes, 30 s
//     from its claim before), then rebuilds again (the epoch only grows);
//     what the dead one staged is dropped. The license's calls wait
//     meanwhile, and its leases get that time back at the switch.
//   - Redis fails over to a replica that lost recent writes: leases granted
//     just before are recorded but unknown to Redis (no seat: heartbeats
//     answer LEASE_EXPIRED, the cleaner adopts them), ended leases may
//     linger until their deadline. Use Redis persistence and replication
//     that acknowledge writes (WAIT) where that matters.
//
// # Left to do
//
//   - A feature's acquisition costs Redis more than a base one (its
//     script reads the license's settings and each pool's, and judges
//     the pools in turn): BenchmarkHotPath measured about +10 % CPU in
//     this process and +30 % in Redis on a license of 50 grants (one
//     covering). Every change of a license's grants bumps the license's
//     version: acquisitions of its base pool granted meanwhile are judged
//     again, and the license's row keeps the old versions until they are
//     pruned.
//   - A rebuild must finish within 30 s of its snapshot (the ends
//     P{lic}:v2:ended remembers cover 60 s). A license of millions of
//     leases would need its snapshot read in pages too.
//   - While a license is rebuilt its calls wait; a forced rebuild
//     (rebuildFrom, after an acquisition whose record is in doubt) stops
//     the license's calls for as long, and holds its leases twice in Redis
//     (live and staged) until the switch.
//   - During a rolling upgrade from layout 1, a release that an older
//     seatd checked before a license's rebuild and drops (its end.lua)
//     after the switch was recorded after the snapshot: the lease stays
//     in the new state, holding its seat until its deadline.
//   - An orphan is found within one sweep of its recorded deadline:
//     (active leases / 25,000) × 10 s, 400 s at a million.
//   - The lease -> license mapping is a per-process cache backed by
//     PostgreSQL (no P lease:<id> keys, Options.LeaseCacheSize); a cold
//     instance reads PostgreSQL once per lease it serves, and so does one
//     serving more leases than its cache holds, per heartbeat of a lease
//     it forgot.
//   - A site policy's caps and reservations are counted per acquisition
//     from the policy index: a cap or reservation costs a range read plus
//     one ZSCORE per lease it counts (a group cap over many members reads
//     all the scope's holders once). A license whose policy reserves
//     hundreds of seats pays that on every acquisition.
//   - A policy change reaches a feature's acquisitions when its push
//     lands: until then they may be judged by the policy before it, but
//     none of those is recorded once the change returned (it bumps the
//     versions of the license's grants too, and the record's insert
//     checks the pool's version: the acquisition is taken back and
//     retried at the new one).
//   - Redis keeps a small tombstone hash per deleted license, an
//     incarnation key per license and one field per license in the expiry
//     hint's gen hashes; none is ever removed.
package distributed
