package seatctl

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Webhooks: the tenant's endpoints, their secrets and delivery logs
// (docs/concepts/webhooks.md).

func webhooksCmd(g *globals) *cobra.Command {
	return group("webhooks", "Endpoints sent the tenant's events as signed webhooks, and their delivery logs", []string{"webhook"},
		webhookCreateCmd(g), webhookListCmd(g), webhookGetCmd(g), webhookDeleteCmd(g),
		webhookEnableCmd(g, false), webhookEnableCmd(g, true), webhookRotateCmd(g),
		webhookDeliveriesCmd(g), webhookReplayCmd(g))
}

func webhookCreateCmd(g *globals) *cobra.Command {
	var (
		url, description, secret string
		types                    []string
	)
	c := &cobra.Command{
		Use:   "create --url URL [--types t1,t2]",
		Short: "Register an endpoint; prints its secret (whsec_...), which no other answer shows",
		Long: `Register an endpoint of the tenant: it is sent the tenant's events of the
--types given (every type when none) as POST requests signed as Standard
Webhooks says, with the secret printed here (keep it: no other answer
shows it). The URL must be https and public unless seatd runs with
--webhook-allow-private-addresses.`,
		Args:    exactArgs(),
		Example: "  seatctl webhooks create --url https://hooks.example.com/seatd --types lease.expired,license.exhausted",
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.CreateWebhookEndpoint, &seatdv1.CreateWebhookEndpointRequest{
				TenantId: g.tenant, Url: url, Types: types, Description: description, Secret: secret,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			if err := g.printEndpoint(resp.GetEndpoint()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "secret: %s\n(shown once: give it to the receiver)\n", resp.GetSecret())
			return err
		},
	}
	c.Flags().StringVar(&url, "url", "", "where deliveries are POSTed (https)")
	c.Flags().StringSliceVar(&types, "types", nil, "event types sent, comma-separated (default: every type)")
	c.Flags().StringVar(&description, "description", "", "a note for the admins")
	c.Flags().StringVar(&secret, "secret", "", "the secret (whsec_ + base64 of 24 to 64 bytes); default: made by seatd")
	return c
}

func webhookListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenant's endpoints (never their secrets)",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ListWebhookEndpoints, &seatdv1.ListWebhookEndpointsRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			t := newTable(g.stdout, "ID", "URL", "TYPES", "STATE", "CREATED")
			for _, ep := range resp.GetEndpoints() {
				t.row(ep.GetId(), ep.GetUrl(), typesLabel(ep.GetTypes()), endpointState(ep), fmtTime(ep.GetCreatedAt()))
			}
			if len(resp.GetEndpoints()) == 0 {
				t.row("(no endpoints)")
			}
			return t.flush()
		},
	}
}

func webhookGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one endpoint",
		Args:  exactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetWebhookEndpoint, &seatdv1.GetWebhookEndpointRequest{TenantId: g.tenant, Id: args[0]})
			if err != nil {
				return err
			}
			return g.printEndpoint(resp.GetEndpoint())
		},
	}
}

func webhookDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Aliases: []string{"rm"},
		Short:   "Delete an endpoint and its delivery log",
		Args:    exactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.DeleteWebhookEndpoint, &seatdv1.DeleteWebhookEndpointRequest{TenantId: g.tenant, Id: args[0]})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "deleted endpoint %s\n", args[0])
			return err
		},
	}
}

func webhookEnableCmd(g *globals, disable bool) *cobra.Command {
	use, short := "enable ID", "Enable an endpoint again (its run of failures forgotten; its waiting deliveries go)"
	if disable {
		use, short = "disable ID", "Disable an endpoint: its deliveries wait until it is enabled"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.SetWebhookEndpointDisabled, &seatdv1.SetWebhookEndpointDisabledRequest{
				TenantId: g.tenant, Id: args[0], Disabled: disable,
			})
			if err != nil {
				return err
			}
			return g.printEndpoint(resp.GetEndpoint())
		},
	}
}

func webhookRotateCmd(g *globals) *cobra.Command {
	var (
		secret string
		keep   time.Duration
	)
	c := &cobra.Command{
		Use:   "rotate-secret ID",
		Short: "Give an endpoint a new secret; the old one signs beside it for --keep-previous",
		Long: `Give an endpoint a new secret and print it. Every request carries a
signature under each of the two secrets for --keep-previous (default 24h),
so that the receiver can switch to the new one without losing a delivery.`,
		Args: exactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			req := &seatdv1.RotateWebhookSecretRequest{TenantId: g.tenant, Id: args[0], Secret: secret}
			if keep != 0 {
				req.KeepPrevious = durationpb.New(keep)
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.RotateWebhookSecret, req)
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			if err := g.printEndpoint(resp.GetEndpoint()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "secret: %s\n(shown once)\n", resp.GetSecret())
			return err
		},
	}
	c.Flags().StringVar(&secret, "secret", "", "the new secret; default: made by seatd")
	c.Flags().DurationVar(&keep, "keep-previous", 0, "how long the previous secret still signs (default 24h, at most 168h)")
	return c
}

func webhookDeliveriesCmd(g *globals) *cobra.Command {
	var limit int32
	c := &cobra.Command{
		Use:   "deliveries ENDPOINT_ID",
		Short: "An endpoint's delivery log, newest first: attempts, last status, latency and error",
		Args:  exactArgs("ENDPOINT_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ListWebhookDeliveries, &seatdv1.ListWebhookDeliveriesRequest{
				TenantId: g.tenant, EndpointId: args[0], PageSize: limit,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			t := newTable(g.stdout, "ID", "EVENT", "TYPE", "SEQ", "STATE", "ATTEMPTS", "STATUS", "LATENCY", "NEXT", "ERROR")
			for _, d := range resp.GetDeliveries() {
				status := "-"
				if d.GetLastStatus() != 0 {
					status = strconv.Itoa(int(d.GetLastStatus()))
				}
				latency := "-"
				if d.GetLastLatency() != nil {
					latency = d.GetLastLatency().AsDuration().Round(time.Millisecond).String()
				}
				next := "-"
				if d.GetNextAttemptAt() != nil {
					next = fmtTime(d.GetNextAttemptAt())
				}
				t.row(d.GetId(), d.GetEventId(), d.GetEventType(), strconv.FormatInt(d.GetSequence(), 10), d.GetState(),
					strconv.Itoa(int(d.GetAttempts())), status, latency, next, orDash(d.GetLastError()))
			}
			if len(resp.GetDeliveries()) == 0 {
				t.row("(no deliveries)")
			}
			return t.flush()
		},
	}
	c.Flags().Int32Var(&limit, "limit", 50, "how many deliveries (newest first)")
	return c
}

func webhookReplayCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "replay DELIVERY_ID",
		Short: "Send a delivery again (the same event, webhook-id and sequence)",
		Args:  exactArgs("DELIVERY_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ReplayWebhookDelivery, &seatdv1.ReplayWebhookDeliveryRequest{TenantId: g.tenant, Id: args[0]})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "delivery %s (event %s) will be sent again\n", resp.GetDelivery().GetId(), resp.GetDelivery().GetEventId())
			return err
		},
	}
}

// printEndpoint prints one endpoint, one field per line.
func (g *globals) printEndpoint(ep *seatdv1.WebhookEndpoint) error {
	if done, err := g.emit(ep); done {
		return err
	}
	t := newTable(g.stdout, "FIELD", "VALUE")
	t.row("id", ep.GetId())
	t.row("url", ep.GetUrl())
	t.row("types", typesLabel(ep.GetTypes()))
	t.row("state", endpointState(ep))
	if ep.GetDescription() != "" {
		t.row("description", ep.GetDescription())
	}
	if ep.GetPreviousSecretUntil() != nil {
		t.row("previous secret until", fmtTime(ep.GetPreviousSecretUntil()))
	}
	if ep.GetFailingSince() != nil {
		t.row("failing since", fmtTime(ep.GetFailingSince()))
	}
	t.row("created", fmtTime(ep.GetCreatedAt()))
	return t.flush()
}

func typesLabel(ts []string) string {
	if len(ts) == 0 {
		return "(every type)"
	}
	return strings.Join(ts, ", ")
}

func endpointState(ep *seatdv1.WebhookEndpoint) string {
	switch {
	case ep.GetDisabled() && ep.GetDisabledReason() != "":
		return "disabled: " + ep.GetDisabledReason()
	case ep.GetDisabled():
		return "disabled"
	}
	return "enabled"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
