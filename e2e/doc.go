// Package e2e holds the end-to-end tests of seatd: they start the real seatd
// binary and talk to it as clients do (gRPC, REST, grpcurl,
// grpc-health-probe).
//
// The binary is $SEATD_BIN when set (make test sets it), otherwise it is
// built once per test run (with -race when the tests run with -race). The CLI
// tools come from $SEATD_TOOLS_BIN (run `make tools`).
//
// The distributed-mode tests (distributed_test.go, faults_test.go,
// leader_test.go) run several instances on one PostgreSQL and Redis: a fresh
// schema and key prefix on the shared servers ($SEATD_TEST_POSTGRES_URL,
// $SEATD_TEST_REDIS_URL; `make services`), and, for the tests that kill or
// stop a server, a private redis-server and a private PostgreSQL cluster
// (initdb into a temporary directory, as the postgres user when run as
// root; $SEATD_TEST_PG_BIN names the directory of initdb and pg_ctl if they
// are not in /usr/lib/postgresql/*/bin). See services_test.go.
//
// The shared PostgreSQL's connections are budgeted (services_test.go): each
// instance's pool is instancePGConns, at most sharedPGInstances instances
// run on it at once (pgSlots), and the tests' own pool is sharedPoolConns,
// about 50 connections in all whatever the machine's size.
//
// Waits never assume a fast machine: one expected event gets eventTimeout,
// many (streams, reconnects) get waitProgress (fail only when nothing
// happens for a while), a unary call unaryTimeout (callDeadline), never the
// whole test a fixed deadline; a test that needs a lease to stay alive while
// it checks something else gives it a TTL that outlasts the checks, and one
// that needs a timing window (kill -9 between two deadlines, checks during
// a drain delay) widens the window and tries again when the machine was too
// slow for it, never skips.
package e2e
