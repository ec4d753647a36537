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
// each change into its outbox and delivers them. stop deletes the
// endpoints (the same seatd then has none again: bench/run.sh measures a
// second control after them), closes the receiver and says how many
// requests it took.
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
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	admin := seatdv1.NewAdminServiceClient(conn)
	adminCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+opKey), time.Minute)
	}
	var created []*seatdv1.WebhookEndpoint
	stop = func() {
		ctx, cancel := adminCtx()
		defer cancel()
		for _, e := range created {
			if _, err := admin.DeleteWebhookEndpoint(ctx, &seatdv1.DeleteWebhookEndpointRequest{TenantId: e.GetTenantId(), Id: e.GetId()}); err != nil {
				fmt.Fprintln(os.Stderr, "load: delete webhook endpoint:", err)
			}
		}
		_ = conn.Close()
		_ = srv.Close()
		fmt.Fprintf(os.Stderr, "load: %d webhook endpoints on loopback took %d requests\n", n, took.Load())
	}
	ctx, cancel := adminCtx()
	defer cancel()
	for i := range n {
		resp, err := admin.CreateWebhookEndpoint(ctx, &seatdv1.CreateWebhookEndpointRequest{
			Url: fmt.Sprintf("http://%s/hook-%d", ln.Addr(), i), Description: "make bench",
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("create webhook endpoint (seatd needs --webhook-allow-private-addresses): %w", err)
		}
		created = append(created, resp.GetEndpoint())
	}
	return stop, nil
}
