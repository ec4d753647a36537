package grpcapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// rawBytes is a request or reply as the bytes on the wire: tests send what
// no proto marshaller would (garbage, strings that are not UTF-8).
type rawBytes struct{ b []byte }

// rawCodec sends and receives rawBytes under the "proto" content subtype.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawBytes).b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawBytes).b = data.Materialize()
	return nil
}

// callRaw sends body to method, unary or streaming, and returns the error
// the call ends with (nil if the first reply came back fine).
func (e *env) callRaw(ctx context.Context, t *testing.T, method string, body []byte) error {
	t.Helper()
	desc, ok := streamDescs[method]
	if !ok {
		return e.conn.Invoke(ctx, method, &rawBytes{body}, &rawBytes{}, grpc.ForceCodecV2(rawCodec{}))
	}
	s, err := e.conn.NewStream(ctx, &desc, method, grpc.ForceCodecV2(rawCodec{}))
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(&rawBytes{body}))
	require.NoError(t, s.CloseSend())
	return s.RecvMsg(&rawBytes{})
}

var streamDescs = map[string]grpc.StreamDesc{
	"/seatd.v1.HeartbeatService/HeartbeatStream": {ServerStreams: true, ClientStreams: true},
	"/seatd.v1.SeatService/WaitForSeat":          {ServerStreams: true},
}
