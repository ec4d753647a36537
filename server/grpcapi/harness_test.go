package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/syncbuffer"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
)

const testOperatorKey = "test-operator-key-0123456789"

// env is a Server on the embedded store (in a temporary directory), wired
// as server/daemon wires it, served over an in-process connection.
type env struct {
	api   *Server
	store server.Store
	logs  *syncbuffer.Buffer
	conn  *grpc.ClientConn
	seats seatdv1.SeatServiceClient
	beats seatdv1.HeartbeatServiceClient
	admin seatdv1.AdminServiceClient
}

// newEnv starts an env; wrap, if set, stands between the Server and the
// store (to make the store fail); configure changes the Server's Config.
func newEnv(t *testing.T, wrap func(server.Store) server.Store, configure ...func(*Config)) *env {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(context.Background(), server.Tenant{ID: server.DefaultTenantID, Name: "Default", CreatedAt: time.Now()})
	require.NoError(t, err)
	var store server.Store = st
	if wrap != nil {
		store = wrap(st)
	}
	logs := &syncbuffer.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{
		Store: store, Cleaner: cleanup.NewCleaner(store, cleanup.Config{}, log, nil),
		Leadership: cleanup.Solo{ID: "test-instance"}, OperatorKey: testOperatorKey, Logger: log,
		WaitPoll: 10 * time.Millisecond,
	}
	for _, c := range configure {
		c(&cfg)
	}
	api := New(cfg)
	srv := grpc.NewServer(
		api.CodecOption(),
		grpc.ChainUnaryInterceptor(api.UnaryInterceptors()...),
		grpc.ChainStreamInterceptor(api.StreamInterceptors()...),
	)
	api.Register(srv)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &env{
		api: api, store: store, logs: logs, conn: conn,
		seats: seatdv1.NewSeatServiceClient(conn), beats: seatdv1.NewHeartbeatServiceClient(conn),
		admin: seatdv1.NewAdminServiceClient(conn),
	}
}

// as sends key as the bearer key of admin calls.
func as(t *testing.T, key string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+key)
}

func operator(t *testing.T) context.Context { return as(t, testOperatorKey) }

// license creates a license in the default tenant.
func (e *env) license(t *testing.T, seats int32, ttl time.Duration) *seatdv1.License {
	t.Helper()
	resp, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "test", Seats: seats, LeaseTtl: durationpb.New(ttl),
	}})
	require.NoError(t, err)
	return resp.GetLicense()
}

func (e *env) acquire(t *testing.T, key, fp string) *seatdv1.AcquireSeatResponse {
	t.Helper()
	resp, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: fp})
	require.NoError(t, err)
	return resp
}

// requireStatus checks err's code and ErrorInfo reason (domain seatd); it
// returns the status for more checks.
func requireStatus(t *testing.T, err error, code codes.Code, reason string, msg ...any) *status.Status {
	t.Helper()
	what := describe(msg)
	require.Error(t, err, what)
	st, ok := status.FromError(err)
	require.True(t, ok, "%s: not a status: %v", what, err)
	require.Equal(t, code, st.Code(), "%s: %v", what, st)
	info := errorInfo(st)
	if reason == "" {
		require.Nil(t, info, "%s: no ErrorInfo expected on %v", what, st)
		return st
	}
	require.NotNil(t, info, "%s: no ErrorInfo on %v", what, st)
	require.Equal(t, reason, info.GetReason(), what)
	require.Equal(t, ErrorDomain, info.GetDomain(), what)
	return st
}

// describe formats testify-style message arguments.
func describe(msg []any) string {
	switch {
	case len(msg) == 0:
		return ""
	case len(msg) == 1:
		return fmt.Sprint(msg[0])
	}
	if f, ok := msg[0].(string); ok {
		return fmt.Sprintf(f, msg[1:]...)
	}
	return fmt.Sprint(msg...)
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

func badRequest(st *status.Status) *errdetails.BadRequest {
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	return nil
}

// requireInvalid checks that err is INVALID_ARGUMENT naming field in its
// message and in a BadRequest field violation.
func requireInvalid(t *testing.T, err error, field string, msg ...any) {
	t.Helper()
	what := describe(msg)
	st := requireStatus(t, err, codes.InvalidArgument, server.ReasonInvalidArgument, what)
	require.True(t, strings.HasPrefix(st.Message(), field+": "), "%s: message %q names %s", what, st.Message(), field)
	br := badRequest(st)
	require.NotNil(t, br, "%s: no BadRequest on %v", what, st)
	require.Len(t, br.GetFieldViolations(), 1, what)
	require.Equal(t, field, br.GetFieldViolations()[0].GetField(), what)
	require.NotEmpty(t, br.GetFieldViolations()[0].GetDescription(), what)
}
