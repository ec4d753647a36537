package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestBadStringsRefusedInBothModes: a NUL in a fingerprint is bad input in
// both storage modes (it used to be stored by the embedded store, and to
// answer BACKEND_UNAVAILABLE with two log lines per request in distributed
// mode, where PostgreSQL refuses it): INVALID_ARGUMENT naming the field,
// over gRPC and REST, nothing stored, nothing logged. Bytes that are not a
// request are INVALID_ARGUMENT / MALFORMED_REQUEST, not INTERNAL.
func TestBadStringsRefusedInBothModes(t *testing.T) {
	t.Parallel()
	t.Run("Embedded", func(t *testing.T) {
		t.Parallel()
		testBadStringsRefused(t, start(t, options{}))
	})
	t.Run("Distributed", func(t *testing.T) {
		t.Parallel()
		testBadStringsRefused(t, sharedBackend(t, "").startSeatd(t, "bad-input-"+randomHex(3)))
	})
}

func testBadStringsRefused(t *testing.T, p *proc) {
	lic := newLicense(t, p, 2, time.Minute, "bad-input")
	logged := p.Output()
	const tries = 50
	for range tries {
		_, err := p.acquire(t.Context(), lic.GetKey(), "fp\x00")
		st := requireStatus(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
		require.True(t, strings.HasPrefix(st.Message(), "fingerprint: "), "message %q names the field", st.Message())
		var field string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		require.Equal(t, "fingerprint", field, "BadRequest names the field: %v", st)
	}

	r := p.do(t, "POST", "/v1/leases", "", map[string]any{"licenseKey": lic.GetKey(), "fingerprint": "fp\x00"}).requireCode(t, http.StatusBadRequest)
	require.Equal(t, "INVALID_ARGUMENT", r.errorReason(), "body: %s", r.Raw)

	ctx, cancel := callCtx(t.Context())
	defer cancel()
	err := p.conn.Invoke(ctx, "/seatd.v1.SeatService/AcquireSeat", &wireBytes{[]byte{0xff, 0xff, 0xff}}, &wireBytes{}, grpc.ForceCodecV2(wireCodec{}))
	requireStatus(t, err, codes.InvalidArgument, "MALFORMED_REQUEST")

	leases, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Empty(t, leases.GetLeases(), "nothing stored")
	_, err = p.acquire(t.Context(), lic.GetKey(), "fp")
	require.NoError(t, err, "the instance still grants")

	// Other goroutines (cleanup, leadership) may log meanwhile, but no
	// refusal does: far fewer new lines than refusals, and no failure.
	added := strings.TrimPrefix(p.Output(), logged)
	require.Less(t, strings.Count(added, "\n"), tries/5, "refusals are not logged:\n%s", added)
	for _, s := range []string{"request failed", "internal error", "fingerprint"} {
		require.NotContains(t, added, s, "refusals are not logged")
	}
}

// wireBytes and wireCodec send bytes no proto marshaller would.
type wireBytes struct{ b []byte }

type wireCodec struct{}

func (wireCodec) Name() string { return "proto" }

func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*wireBytes).b)}, nil
}

func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*wireBytes).b = data.Materialize()
	return nil
}
