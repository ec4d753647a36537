package seatctl

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// exportPage is one page of events: the rows and the next page's token.
type exportPage struct {
	events []proto.Message
	next   string
}

// exporter fetches one page of one event kind.
type exporter struct {
	header  []string
	row     func(proto.Message) []string
	page    func(ctx context.Context, admin seatdv1.AdminServiceClient, q exportQuery) (exportPage, error)
	license bool // takes --license
	// feature is an event's feature, for --feature; nil: the log has none.
	feature func(proto.Message) string
}

type exportQuery struct {
	tenant, license string
	start, end      *timestamppb.Timestamp
	token           string
	pageSize        int32
}

func csvTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano)
}

var exporters = map[string]exporter{
	"usage": {
		header:  []string{"lease_id", "license_id", "end_state", "started_at", "ended_at", "duration_seconds", "grant_id", "feature"},
		license: true,
		feature: func(m proto.Message) string { return m.(*seatdv1.UsageEvent).GetFeature() },
		row: func(m proto.Message) []string {
			e := m.(*seatdv1.UsageEvent)
			return []string{e.GetLeaseId(), e.GetLicenseId(), stateName(e.GetEndState()), csvTime(e.GetStartedAt()), csvTime(e.GetEndedAt()),
				fmt.Sprint(e.GetDuration().AsDuration().Seconds()), e.GetGrantId(), e.GetFeature()}
		},
		page: func(ctx context.Context, admin seatdv1.AdminServiceClient, q exportQuery) (exportPage, error) {
			r, err := admin.ListUsageEvents(ctx, &seatdv1.ListUsageEventsRequest{TenantId: q.tenant, LicenseId: q.license,
				StartTime: q.start, EndTime: q.end, PageSize: q.pageSize, PageToken: q.token})
			return exportPage{next: r.GetNextPageToken(), events: messages(r.GetUsageEvents())}, err
		},
	},
	"cleanup": {
		header:  []string{"lease_id", "license_id", "cleanup_type", "last_heartbeat_at", "expires_at", "cleaned_at", "grant_id", "feature"},
		license: true,
		feature: func(m proto.Message) string { return m.(*seatdv1.CleanupEvent).GetFeature() },
		row: func(m proto.Message) []string {
			e := m.(*seatdv1.CleanupEvent)
			return []string{e.GetLeaseId(), e.GetLicenseId(), e.GetCleanupType(), csvTime(e.GetLastHeartbeatAt()), csvTime(e.GetExpiresAt()), csvTime(e.GetCleanedAt()),
				e.GetGrantId(), e.GetFeature()}
		},
		page: func(ctx context.Context, admin seatdv1.AdminServiceClient, q exportQuery) (exportPage, error) {
			r, err := admin.ListCleanupEvents(ctx, &seatdv1.ListCleanupEventsRequest{TenantId: q.tenant, LicenseId: q.license,
				StartTime: q.start, EndTime: q.end, PageSize: q.pageSize, PageToken: q.token})
			return exportPage{next: r.GetNextPageToken(), events: messages(r.GetCleanupEvents())}, err
		},
	},
	"audit": {
		header: []string{"id", "at", "actor", "action", "resource", "resource_id", "details"},
		row: func(m proto.Message) []string {
			e := m.(*seatdv1.AuditEvent)
			details := ""
			if len(e.GetDetails()) > 0 {
				b, _ := json.Marshal(e.GetDetails()) // keys sorted
				details = string(b)
			}
			return []string{e.GetId(), csvTime(e.GetAt()), e.GetActor(), e.GetAction(), e.GetResource(), e.GetResourceId(), details}
		},
		page: func(ctx context.Context, admin seatdv1.AdminServiceClient, q exportQuery) (exportPage, error) {
			r, err := admin.ListAuditEvents(ctx, &seatdv1.ListAuditEventsRequest{TenantId: q.tenant,
				StartTime: q.start, EndTime: q.end, PageSize: q.pageSize, PageToken: q.token})
			return exportPage{next: r.GetNextPageToken(), events: messages(r.GetAuditEvents())}, err
		},
	},
}

func exportCmd(g *globals) *cobra.Command {
	var w window
	var format, license, feature string
	var size int32
	c := &cobra.Command{
		Use:       "export usage|audit|cleanup [--since 30d] [--until …] [--license ID] [--feature F] [--format csv|jsonl]",
		Short:     "Stream every usage, audit or cleanup event of a time window as CSV or JSON lines",
		Long:      "Stream every usage, audit or cleanup event of a time window as CSV (a header line, UTC RFC 3339 times; grant_id and feature are empty for a license's base pool) or JSON lines (one event per line, the API's JSON), page after page as they arrive. -o does not apply.",
		ValidArgs: []cobra.Completion{"usage", "audit", "cleanup"},
		Args:      exactArgs("usage|audit|cleanup"),
		RunE: func(c *cobra.Command, args []string) error {
			ex, ok := exporters[args[0]]
			if !ok {
				return usageErrorf("export %q: want usage, audit or cleanup", args[0])
			}
			if format != "csv" && format != "jsonl" {
				return usageErrorf("--format %q: want csv or jsonl", format)
			}
			if license != "" && !ex.license {
				return usageErrorf("--license: the %s log is not kept per license", args[0])
			}
			if feature != "" && ex.feature == nil {
				return usageErrorf("--feature: the %s log is not kept per feature", args[0])
			}
			start, end, err := w.times()
			if err != nil {
				return err
			}
			q := exportQuery{tenant: g.tenant, license: license, start: start, end: end, pageSize: size}
			var cw *csv.Writer
			if format == "csv" {
				cw = csv.NewWriter(g.stdout)
				if err := cw.Write(ex.header); err != nil {
					return err
				}
			}
			jl := protojson.MarshalOptions{EmitUnpopulated: true}
			for {
				admin, ctx, cancel, err := g.admin(c) // --timeout bounds each page
				if err != nil {
					return err
				}
				p, err := ex.page(ctx, admin, q)
				cancel()
				if err != nil {
					return err
				}
				for _, e := range p.events {
					// The API lists every feature's events: the cut is here.
					if feature != "" && ex.feature(e) != feature {
						continue
					}
					if cw != nil {
						if err := cw.Write(ex.row(e)); err != nil {
							return err
						}
						continue
					}
					b, err := jl.Marshal(e)
					if err != nil {
						return err
					}
					if _, err := fmt.Fprintf(g.stdout, "%s\n", b); err != nil {
						return err
					}
				}
				if cw != nil {
					if cw.Flush(); cw.Error() != nil {
						return cw.Error()
					}
				}
				if q.token = p.next; q.token == "" {
					return nil
				}
			}
		},
	}
	w.register(c, "30d")
	c.Flags().StringVar(&format, "format", "csv", "csv or jsonl")
	c.Flags().StringVar(&license, "license", "", "only this license's events, its feature grants' included (usage, cleanup)")
	c.Flags().StringVar(&feature, "feature", "", "only the events of this feature's grants (usage, cleanup)")
	c.Flags().Int32Var(&size, "page-size", pageSize, "events per call (1-1000)")
	_ = c.Flags().MarkHidden("page-size")
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"csv", "jsonl"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("license", g.completeLicenses)
	return c
}

// messages is a page's events as proto.Message values.
func messages[M proto.Message](events []M) []proto.Message {
	out := make([]proto.Message, len(events))
	for i, e := range events {
		out[i] = e
	}
	return out
}
