package grpcapi

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/server"
)

// An open stream holds goroutines and buffers for as long as it lasts, and
// a client needs no key to open one: streams are capped per instance, and a
// heartbeat stream must name its lease within a deadline.
const (
	DefaultMaxStreams          = 10000
	DefaultFirstMessageTimeout = 10 * time.Second
)

// streamLimits counts the open streams of the seatd services.
type streamLimits struct {
	max  int64 // 0: no cap
	open atomic.Int64
}

// interceptor refuses a stream beyond the cap with RESOURCE_EXHAUSTED
// (TOO_MANY_STREAMS) and a hint to retry: the cap is per instance, another
// may have room, and this one will as streams end.
func (l *streamLimits) interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if l.max <= 0 || !strings.HasPrefix(info.FullMethod, "/seatd.") {
			return handler(srv, ss)
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			return refusal(codes.ResourceExhausted, server.ReasonTooManyStreams,
				fmt.Sprintf("this instance has %d streams open, its limit; retry later or on another instance", l.max), time.Second)
		}
		defer l.open.Add(-1)
		return handler(srv, ss)
	}
}

// refusal is a status for a limit: an ErrorInfo reason and, when retry is
// positive, a RetryInfo delay.
func refusal(code codes.Code, reason, msg string, retry time.Duration) error {
	st := status.New(code, msg)
	details := []protoadaptMessage{&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}}
	if retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	}
	if with, err := st.WithDetails(details...); err == nil {
		st = with
	}
	return st.Err()
}

// firstMessageDeadline fires when a stream opened but said nothing for too
// long. A nil channel (no deadline) never fires.
func firstMessageDeadline(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
