package seatctl

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// statusTable is the licenses part of `seatctl status`: a row per license
// (its base pool), then a row per feature grant of it, indented.
func statusTable(out io.Writer, licenses []*seatdv1.License, now time.Time) error {
	t := newTable(out, "LICENSE", "NAME", "IN USE", "SEATS", "WAITING", "TTL", "EXPIRES", "ACTIVE")
	features := false
	for _, l := range licenses {
		t.row(l.GetId(), l.GetName(), fmt.Sprint(l.GetSeatsInUse()), seatsLabel(l.GetSeats(), l.GetOverdraft()), fmt.Sprint(l.GetWaiting()),
			fmtDuration(l.GetLeaseTtl()), fmtTime(l.GetExpiresAt()), yesNo(l.GetActive()))
		for _, gr := range l.GetGrants() {
			features = true
			t.row("  "+gr.GetId(), featureVersion(gr), fmt.Sprint(gr.GetSeatsInUse()),
				seatsLabel(gr.GetSeats(), gr.GetOverdraft()), "", "", fmtTime(grantExpiry(l, gr)), grantState(l, gr, now))
		}
	}
	if len(licenses) == 0 {
		t.row("(no licenses)")
	}
	if err := t.flush(); err != nil {
		return err
	}
	if features {
		_, err := fmt.Fprintln(out, "(indented: a license's feature grants, each its own pool; the license's row is its base pool)")
		return err
	}
	return nil
}

// featureVersion names a grant for people: "render 2024", "sim (all
// versions)".
func featureVersion(gr *seatdv1.FeatureGrant) string {
	if gr.GetVersion() == "" {
		return gr.GetFeature() + " (all versions)"
	}
	return gr.GetFeature() + " " + gr.GetVersion()
}

// StatusView is what `seatctl status -o json` prints: the tenant's licenses
// as the API gives them, and the cleanup status (null, with
// cleanupNotShown saying why, for an API key: cleanup is the operator's).
type StatusView struct {
	Licenses        []json.RawMessage `json:"licenses"`
	Cleanup         json.RawMessage   `json:"cleanup"`
	CleanupNotShown string            `json:"cleanupNotShown,omitempty"`
}

func statusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "One screen: every license and its features with seats in use, TTL, expiry, active; the cleanup leader and last pass",
		Long: `One screen, as lmstat -a: every license with its base pool's seats in use,
then under it each of its feature grants (indented: grant id, feature and
the highest version it covers) with its own seats in use, expiry and
whether it grants seats now; then the cleanup leader and its last pass.
-o json prints the licenses as the API gives them (each with its grants).`,
		Args: exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			licenses, err := g.allLicenses(c)
			if err != nil {
				return err
			}
			admin, ctx, cancel, err := g.admin(c)
			if err != nil {
				return err
			}
			defer cancel()
			cleanup, err := admin.GetCleanupStatus(ctx, &seatdv1.GetCleanupStatusRequest{})
			notShown := ""
			if err != nil {
				if status.Code(err) != codes.PermissionDenied {
					return err
				}
				notShown = "operator key only"
			}
			if g.output != "table" {
				v := StatusView{Licenses: []json.RawMessage{}, Cleanup: json.RawMessage("null"), CleanupNotShown: notShown}
				for _, l := range licenses {
					raw, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(l)
					if err != nil {
						return err
					}
					v.Licenses = append(v.Licenses, raw)
				}
				if cleanup != nil {
					if v.Cleanup, err = (protojson.MarshalOptions{EmitUnpopulated: true}).Marshal(cleanup); err != nil {
						return err
					}
				}
				_, err = g.emitJSON(v)
				return err
			}
			if err := statusTable(g.stdout, licenses, time.Now()); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
			if cleanup == nil {
				_, err = fmt.Fprintln(g.stdout, "cleanup: not shown ("+notShown+")")
				return err
			}
			return printCleanupStatus(g.stdout, cleanup)
		},
	}
}
