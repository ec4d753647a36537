package grpcapi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/metrics"
)

// An open stream holds goroutines, buffers and its request metadata for as
// long as it lasts, and a client needs no key to open one: streams are
// capped per instance and per client address, a heartbeat stream must name
// its lease within a deadline, and one that stays silent is ended (when its
// lease ends, or after the idle timeout).
const (
	DefaultMaxStreams           = 10000
	DefaultMaxStreamsPerAddress = 2000
	DefaultFirstMessageTimeout  = 10 * time.Second
	DefaultStreamIdleTimeout    = 10 * time.Minute
)

// streamLimits counts the open streams of the seatd services, in all and
// per client address, and the metadata bytes they hold.
type streamLimits struct {
	max     int64 // 0: no cap
	perAddr int   // 0: no cap
	open    atomic.Int64
	metrics *metrics.Network

	mu     sync.Mutex
	byAddr map[string]int // addresses with a stream open; removed at 0
}

func newStreamLimits(max, perAddr int, m *metrics.Network) *streamLimits {
	if m == nil {
		m = metrics.DiscardNetwork()
	}
	l := &streamLimits{max: int64(max), perAddr: perAddr, metrics: m, byAddr: map[string]int{}}
	m.Limits.WithLabelValues("max_streams").Set(float64(max))
	m.Limits.WithLabelValues("max_streams_per_address").Set(float64(perAddr))
	return l
}

// interceptor refuses a stream beyond a cap with RESOURCE_EXHAUSTED
// (TOO_MANY_STREAMS) and a hint to retry: the instance cap is per
// instance, another may have room, and this one will as streams end; the
// address cap keeps one client address (one key holder) from taking every
// slot of the instance.
func (l *streamLimits) interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !strings.HasPrefix(info.FullMethod, "/seatd.") {
			return handler(srv, ss)
		}
		addr := clientAddr(ss.Context())
		if err := l.take(addr); err != nil {
			return err
		}
		held := metadataBytes(ss.Context())
		l.metrics.StreamsOpen.Inc()
		l.metrics.StreamMetadata.Add(float64(held))
		defer func() {
			l.metrics.StreamMetadata.Sub(float64(held))
			l.metrics.StreamsOpen.Dec()
			l.give(addr)
		}()
		return handler(srv, ss)
	}
}

// take counts a stream from addr in, or refuses it.
func (l *streamLimits) take(addr string) error {
	if n := l.open.Add(1); l.max > 0 && n > l.max {
		l.open.Add(-1)
		l.metrics.StreamsRefused.WithLabelValues("instance").Inc()
		return refusal(codes.ResourceExhausted, server.ReasonTooManyStreams,
			fmt.Sprintf("this instance has %d streams open, its limit; retry later or on another instance", l.max), time.Second)
	}
	if l.perAddr <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[addr] >= l.perAddr {
		l.open.Add(-1)
		l.metrics.StreamsRefused.WithLabelValues("address").Inc()
		return refusal(codes.ResourceExhausted, server.ReasonTooManyStreams,
			fmt.Sprintf("this client address has %d streams open, the limit per address; end one or retry later", l.perAddr), time.Second)
	}
	l.byAddr[addr]++
	return nil
}

func (l *streamLimits) give(addr string) {
	l.open.Add(-1)
	if l.perAddr <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[addr] <= 1 {
		delete(l.byAddr, addr)
	} else {
		l.byAddr[addr]--
	}
}

// metadataBytes is the size of a call's request metadata (names and
// values), which the stream holds as long as it is open. The gRPC server
// bounds it per call (grpc.MaxHeaderListSize, --grpc-max-header-bytes).
func metadataBytes(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	n := 0
	for k, vs := range md {
		for _, v := range vs {
			n += len(k) + len(v)
		}
	}
	return n
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
