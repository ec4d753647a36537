package seatctl

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

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
		Short: "One screen: every license with seats in use, TTL, expiry, active; the cleanup leader and last pass",
		Args:  exactArgs(),
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
			t := newTable(g.stdout, "LICENSE", "NAME", "IN USE", "SEATS", "WAITING", "TTL", "EXPIRES", "ACTIVE")
			for _, l := range licenses {
				seats := fmt.Sprint(l.GetSeats())
				if l.GetOverdraft() > 0 {
					seats += fmt.Sprintf(" +%d", l.GetOverdraft())
				}
				t.row(l.GetId(), l.GetName(), fmt.Sprint(l.GetSeatsInUse()), seats, fmt.Sprint(l.GetWaiting()),
					fmtDuration(l.GetLeaseTtl()), fmtTime(l.GetExpiresAt()), yesNo(l.GetActive()))
			}
			if len(licenses) == 0 {
				t.row("(no licenses)")
			}
			if err := t.flush(); err != nil {
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
