package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// startWebhooks (-webhooks n, issue 29): a webhook receiver on loopback,
// answering 204 to every request, and n endpoints of it, each subscribed
// to every event type of the operator's tenant, registered before the
// phases (seatd must run with --webhook-allow-private-addresses). The
// phases then measure the seat path of a seatd that writes an event for
// each change into its outbox and delivers them. stop closes the receiver
// and says how many requests it took.
func startWebhooks(target, opKey string, n int) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var took atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		took.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "load: webhook receiver:", err)
		}
	}()
	stop = func() {
		_ = srv.Close()
		fmt.Fprintf(os.Stderr, "load: %d webhook endpoints on loopback took %d requests\n", n, took.Load())
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		stop()
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+opKey), time.Minute)
	defer cancel()
	admin := seatdv1.NewAdminServiceClient(conn)
	for i := range n {
		_, err := admin.CreateWebhookEndpoint(ctx, &seatdv1.CreateWebhookEndpointRequest{
			Url: fmt.Sprintf("http://%s/hook-%d", ln.Addr(), i), Description: "make bench",
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("create webhook endpoint (seatd needs --webhook-allow-private-addresses): %w", err)
		}
	}
	return stop, nil
}
