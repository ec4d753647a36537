package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"sigs.k8s.io/yaml"

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

// httpRule is one REST route of proto/seatd/v1/http.yaml.
type httpRule struct {
	Selector string `json:"selector"`
	Get      string `json:"get"`
	Post     string `json:"post"`
	Patch    string `json:"patch"`
	Put      string `json:"put"`
	Delete   string `json:"delete"`
	Body     string `json:"body"`
}

// adminRoutes reads the REST routes grpc-gateway is generated from.
func adminRoutes(t *testing.T) map[string]httpRule {
	t.Helper()
	raw, err := os.ReadFile("../../proto/seatd/v1/http.yaml")
	require.NoError(t, err)
	var doc struct {
		HTTP struct {
			Rules []httpRule `json:"rules"`
		} `json:"http"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	out := map[string]httpRule{}
	for _, r := range doc.HTTP.Rules {
		out[r.Selector] = r
	}
	return out
}

// restCall is a method's REST route with every path variable filled in.
func restCall(t *testing.T, routes map[string]httpRule, m protoreflect.MethodDescriptor) (verb, path string, body bool) {
	t.Helper()
	rule, ok := routes[string(m.FullName())]
	require.True(t, ok, "%s has no REST route", m.Name())
	switch {
	case rule.Get != "":
		verb, path = http.MethodGet, rule.Get
	case rule.Post != "":
		verb, path = http.MethodPost, rule.Post
	case rule.Patch != "":
		verb, path = http.MethodPatch, rule.Patch
	case rule.Put != "":
		verb, path = http.MethodPut, rule.Put
	case rule.Delete != "":
		verb, path = http.MethodDelete, rule.Delete
	default:
		t.Fatalf("%s: no verb", m.Name())
	}
	// The key's own tenant, so that only the role decides.
	path = strings.ReplaceAll(path, "{tenant_id}", server.DefaultTenantID)
	path = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
	return verb, path, rule.Body != ""
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
	routes := adminRoutes(t)
	for i := range methods.Len() {
		m := methods.Get(i)
		full := fmt.Sprintf("/seatd.v1.AdminService/%s", m.Name())
		need, ok := grpcapi.RoleFor(full)
		require.True(t, ok, "%s has no row in the authorization matrix (grpcapi/authz.go: methodRoles)", m.Name())
		verb, path, body := restCall(t, routes, m)
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

// TestNoSingleSignOn: without --sso-config the console still learns that
// there is no session (and offers keys), and the other sign-in routes do
// not exist.
func TestNoSingleSignOn(t *testing.T) {
	t.Parallel()
	e := newMatrixEnv(t, nil)
	r := do(t, e.h, http.MethodGet, "/ui/auth/session", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, false, r.json["signedIn"])
	require.Equal(t, http.StatusNotFound, do(t, e.h, http.MethodGet, "/ui/auth/login?issuer=x", "", "").code)
	require.Equal(t, http.StatusNotFound, do(t, e.h, http.MethodPost, "/ui/auth/logout", "", "").code)
	require.Equal(t, http.StatusOK, do(t, e.h, http.MethodGet, "/ui/", "", "").code, "the console itself")
}
