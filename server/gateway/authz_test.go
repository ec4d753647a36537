package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/metrics"
)

// matrixEnv is a gateway and the gRPC connection behind it.
type matrixEnv struct {
	h    *Handler
	conn *grpc.ClientConn
}

func newMatrixEnv(t *testing.T, configure func(*grpcapi.Config)) matrixEnv {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(context.Background(), server.Tenant{ID: server.DefaultTenantID, CreatedAt: time.Now()})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	cfg := grpcapi.Config{
		Store: st, Cleaner: cleanup.NewCleaner(st, cleanup.Config{}, nil, m),
		Leadership: cleanup.Solo{ID: "gw"}, OperatorKey: operatorKey, Metrics: m,
	}
	if configure != nil {
		configure(&cfg)
	}
	api := grpcapi.New(cfg)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(api.UnaryInterceptors()...), grpc.ChainStreamInterceptor(api.StreamInterceptors()...))
	api.Register(srv)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	h, err := New(t.Context(), conn, reg, Limits{MaxBodyBytes: testMaxBody})
	require.NoError(t, err)
	return matrixEnv{h: h, conn: conn}
}

// keyWithRole makes an API key of the default tenant with the role.
func (e matrixEnv) keyWithRole(t *testing.T, role server.Role) string {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+operatorKey)
	k, err := seatdv1.NewAdminServiceClient(e.conn).CreateApiKey(ctx, &seatdv1.CreateApiKeyRequest{
		TenantId: server.DefaultTenantID, Name: string(role), Role: string(role),
	})
	require.NoError(t, err)
	require.Equal(t, string(role), k.GetApiKey().GetRole())
	return k.GetSecret()
}

// restCall is a method's REST route with every path variable filled in.
func restCall(t *testing.T, m protoreflect.MethodDescriptor) (verb, path string, body bool) {
	t.Helper()
	rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
	require.NotNil(t, rule, "%s has no REST route", m.Name())
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		verb, path = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		verb, path = http.MethodPost, p.Post
	case *annotations.HttpRule_Patch:
		verb, path = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Put:
		verb, path = http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		verb, path = http.MethodDelete, p.Delete
	default:
		t.Fatalf("%s: REST pattern %T", m.Name(), p)
	}
	path = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
	return verb, path, rule.GetBody() != ""
}

// TestAuthorizationMatrix calls every admin method with each role, over
// gRPC and over REST: a role below the method's (grpcapi.RoleFor) is
// refused PERMISSION_DENIED before the handler runs; a role that reaches
// it is let through (whatever the empty request then earns); no
// credentials are UNAUTHENTICATED.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e := newMatrixEnv(t, nil)
	creds := map[server.Role]string{server.RoleOperator: operatorKey}
	for _, r := range server.TenantRoles {
		creds[r] = e.keyWithRole(t, r)
	}
	roles := append(append([]server.Role{}, server.TenantRoles...), server.RoleOperator)
	methods := seatdv1.File_seatd_v1_admin_service_proto.Services().ByName("AdminService").Methods()
	require.Positive(t, methods.Len())
	for i := range methods.Len() {
		m := methods.Get(i)
		full := fmt.Sprintf("/seatd.v1.AdminService/%s", m.Name())
		need, ok := grpcapi.RoleFor(full)
		require.True(t, ok, "%s has no row in the authorization matrix (grpcapi/authz.go: methodRoles)", m.Name())
		verb, path, body := restCall(t, m)
		for _, role := range append(roles, "") {
			allowed := role != "" && role.AtLeast(need)
			name := fmt.Sprintf("%s as %q", m.Name(), role)

			// gRPC
			ctx := t.Context()
			if role != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+creds[role])
			}
			err := e.conn.Invoke(ctx, full, dynamicpb.NewMessage(m.Input()), dynamicpb.NewMessage(m.Output()))
			code := status.Code(err)
			switch {
			case role == "":
				require.Equal(t, codes.Unauthenticated, code, "gRPC %s: %v", name, err)
			case allowed:
				require.NotContains(t, []codes.Code{codes.PermissionDenied, codes.Unauthenticated}, code, "gRPC %s: %v", name, err)
			default:
				require.Equal(t, codes.PermissionDenied, code, "gRPC %s: %v", name, err)
			}

			// REST
			payload := ""
			if body {
				payload = "{}"
			}
			r := do(t, e.h, verb, path, creds[role], payload)
			switch {
			case role == "":
				require.Equal(t, http.StatusUnauthorized, r.code, "REST %s %s %s: %s", verb, path, name, r.body)
			case allowed:
				require.NotContains(t, []int{http.StatusForbidden, http.StatusUnauthorized}, r.code, "REST %s %s %s: %s", verb, path, name, r.body)
			default:
				require.Equal(t, http.StatusForbidden, r.code, "REST %s %s %s: %s", verb, path, name, r.body)
				require.Equal(t, server.ReasonPermissionDenied, r.reason(), name)
			}
		}
	}
}
