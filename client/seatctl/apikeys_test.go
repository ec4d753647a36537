package seatctl

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// keysAdmin answers CreateApiKey with the key it was asked for.
type keysAdmin struct{ fakeAdmin }

func (f *keysAdmin) CreateApiKey(_ context.Context, req *seatdv1.CreateApiKeyRequest, _ ...grpc.CallOption) (*seatdv1.CreateApiKeyResponse, error) {
	if err := f.keep("CreateApiKey", req); err != nil {
		return nil, err
	}
	return &seatdv1.CreateApiKeyResponse{
		ApiKey: &seatdv1.ApiKey{Id: "key_1", TenantId: req.GetTenantId(), Name: req.GetName(), Role: req.GetRole()},
		Secret: "sak_secret",
	}, nil
}

func TestAPIKeysCreateWithARole(t *testing.T) {
	f := &keysAdmin{}
	var out, errb bytes.Buffer
	run1 := func(args ...string) int {
		out.Reset()
		g := &globals{stdout: &out, adminClient: f}
		return run(g, append([]string{"--key", "test-key"}, args...), &out, &errb)
	}
	require.Equal(t, ExitOK, run1("apikeys", "create", "acme", "--name", "ci", "--role", "viewer"), errb.String())
	req := f.requests["CreateApiKey"].(*seatdv1.CreateApiKeyRequest)
	require.Equal(t, "viewer", req.GetRole())
	require.Regexp(t, `ROLE`, out.String())
	require.Regexp(t, `key_1\s+acme\s+ci\s+viewer`, out.String())

	// The default is admin (every key's rights before roles); "keys" is
	// the command's short name.
	require.Equal(t, ExitOK, run1("keys", "create", "acme", "--name", "ops"), errb.String())
	require.Equal(t, "admin", f.requests["CreateApiKey"].(*seatdv1.CreateApiKeyRequest).GetRole())
}
