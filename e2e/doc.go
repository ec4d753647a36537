// Package e2e holds the end-to-end tests of seatd: they start the real seatd
// binary and talk to it as clients do (gRPC, REST, grpcurl,
// grpc-health-probe).
//
// The binary is $SEATD_BIN when set (make test sets it), otherwise it is
// built once per test run (with -race when the tests run with -race). The CLI
// tools come from $SEATD_TOOLS_BIN (run `make tools`).
package e2e
