package storetest

import (
	"sync"
	"testing"
)

// Run runs the conformance suite against a backend. Every subtest opens its
// own store (or one per small group) through newBackend and runs in parallel
// with the others (tests that mostly wait run at once whatever -parallel
// is), so the whole suite takes a few seconds: expiry is tested by passing
// the deadlines the store handed out on the store's own clock (Clock: moved
// at once where the store takes an injected one; else one-second leases
// whose deadlines are waited for).
//
// A backend's test calls it unchanged:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Opener {
//			dir := t.TempDir()
//			return func(t *testing.T) server.Store { return mustOpen(t, dir) }
//		})
//	}
func Run(t *testing.T, newBackend Backend) {
	RunWith(t, newBackend, Options{})
}

// Options leave parts of the suite out, for a backend that does not
// implement them yet.
type Options struct {
	// NoPolicy leaves out the site-policy cases (Policy).
	NoPolicy bool
	// NoWebhooks leaves out the event outbox cases (Webhooks): the suite's
	// own reference store keeps no outbox; both seatd stores run them.
	NoWebhooks bool
}

// RunWith is Run with options.
func RunWith(t *testing.T, newBackend Backend, o Options) {
	if newBackend == nil {
		t.Fatal("storetest.Run: nil Backend")
	}
	groups := []struct {
		name string
		run  func(*testing.T, Backend)
	}{
		{"SeatLimit", testSeatLimit},       // invariant 1
		{"Dedupe", testDedupe},             // invariant 4
		{"Expiry", testExpiry},             // invariants 2 and 3
		{"LeaseAuth", testLeaseAuth},       // invariant 8 (lease tokens)
		{"LeaseEnd", testLeaseEnd},         // release / revoke idempotence
		{"Cleanup", testCleanup},           // invariant 5, expiry index
		{"TransientErrors", testTransient}, // invariant 6
		{"ActiveLeases", testActiveLeases},
		{"TenantIsolation", testIsolation}, // invariant 8
		{"Licenses", testLicenses},
		{"ListLeases", testListLeases},
		{"Tenants", testTenants},
		{"SeatsInUseOf", testSeatsInUseOf},
		{"EventLists", testEventLists},
		{"UsageReport", testUsageReport},
		{"UsageAgrees", testUsageAgrees}, // the export bills what the report counts
		{"ZombieReport", testZombieReport},
		{"Audit", testAudit},
		{"SigningKeys", testSigningKeys},
		{"Persistence", testPersistence}, // DESIGN "a restart loses nothing"
		{"Borrow", testBorrow},           // invariants 1, 3, 5 for borrowed leases
		{"Retention", testRetention},
		{"Features", testFeatures},       // invariant 12: each grant a pool of its own
		{"LicenseFile", testLicenseFile}, // invariant 15: the file in force never goes back
	}
	if !o.NoWebhooks {
		groups = append(groups, struct {
			name string
			run  func(*testing.T, Backend)
		}{"Webhooks", testWebhooks}, // invariant 14: an event for every change, and only for a change
			struct {
				name string
				run  func(*testing.T, Backend)
			}{"WebhookRetention", testWebhookRetention})
	}
	if !o.NoPolicy {
		groups = append(groups, struct {
			name string
			run  func(*testing.T, Backend)
		}{"Policy", testPolicy}, // invariant 13: the site policy judged with the count
			struct {
				name string
				run  func(*testing.T, Backend)
			}{"Linger", testLinger}) // lingering seats: server/linger.go
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, newBackend)
		})
	}
}

// waiting runs subtests that spend most of their time sleeping past lease
// deadlines. They run at once, each a plain subtest started from its own
// goroutine (t.Run allows that), rather than as parallel tests: a parallel
// test holds one of go test's -parallel slots (GOMAXPROCS by default) while
// it sleeps, and a dozen of them would otherwise queue on a small machine.
type waiting struct {
	t  *testing.T
	wg sync.WaitGroup
}

// sleepers returns a waiting for t's subtests; call wait before t's
// function returns.
func sleepers(t *testing.T) *waiting { return &waiting{t: t} }

func (w *waiting) run(name string, f func(*testing.T)) {
	w.wg.Go(func() { w.t.Run(name, f) })
}

func (w *waiting) wait() { w.wg.Wait() }
