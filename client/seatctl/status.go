package seatctl

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// statusTable is the licenses part of `seatctl status`: a row per license
// (its base pool), then a row per feature grant of it, indented. Each row
// shows its seats in use, then apart from them what the site policy keeps
// (use: RESERVED, seats kept for reservations and how many members hold;
// LINGERING, released seats still held) and the pool's seats. A feature's
// reservations span all its grants: its first grant's row shows them, the
// others a ditto mark.
func statusTable(out io.Writer, licenses []*seatdv1.License, use policyUse, now time.Time) error {
	t := newTable(out, "LICENSE", "NAME", "IN USE", "RESERVED", "LINGERING", "SEATS", "WAITING", "TTL", "EXPIRES", "ACTIVE")
	features, reserved := false, false
	cell := func(u seatUse) string {
		if u.Reserved == 0 {
			return ""
		}
		reserved = true
		return fmt.Sprintf("%d (%d taken)", u.Reserved, u.Taken)
	}
	for _, l := range licenses {
		pools := use[l.GetId()]
		base := pools[""]
		t.row(l.GetId(), l.GetName(), fmt.Sprint(l.GetSeatsInUse()), cell(base), fmt.Sprint(base.Lingering),
			seatsLabel(l.GetSeats(), l.GetOverdraft()), fmt.Sprint(l.GetWaiting()),
			fmtDuration(l.GetLeaseTtl()), fmtTime(l.GetExpiresAt()), yesNo(l.GetActive()))
		shown := map[string]bool{}
		for _, gr := range l.GetGrants() {
			features = true
			f := pools[gr.GetFeature()]
			res, lingering := cell(f), fmt.Sprint(f.Lingering)
			if shown[gr.GetFeature()] && f.Reserved > 0 {
				res = `"`
			}
			shown[gr.GetFeature()] = true
			t.row("  "+gr.GetId(), featureVersion(gr), fmt.Sprint(gr.GetSeatsInUse()), res, lingering,
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
		if _, err := fmt.Fprintln(out, "(indented: a license's feature grants, each its own pool; the license's row is its base pool)"); err != nil {
			return err
		}
	}
	if reserved {
		_, err := fmt.Fprintln(out, `(RESERVED: seats the site policy keeps for its reservations, and how many of them members hold now; `+
			`a feature's reservations span its grants: on its first grant's row, " on the others)`)
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
// as the API gives them, each pool's reserved and lingering seats, and
// the cleanup status (null, with cleanupNotShown saying why, for an API
// key: cleanup is the operator's).
type StatusView struct {
	Licenses        []json.RawMessage `json:"licenses"`
	Pools           []PoolStatus      `json:"pools"`
	Cleanup         json.RawMessage   `json:"cleanup"`
	CleanupNotShown string            `json:"cleanupNotShown,omitempty"`
}

// PoolStatus is one pool of a license in `seatctl status -o json`: its
// base pool (feature "") or a feature, all its grants together. Reserved
// are the seats its reservations keep, reservedTaken those members hold
// now; lingering the released seats still held (0 until leases linger).
type PoolStatus struct {
	LicenseID     string `json:"licenseId"`
	Feature       string `json:"feature"`
	Reserved      int32  `json:"reserved"`
	ReservedTaken int32  `json:"reservedTaken"`
	Lingering     int32  `json:"lingering"`
}

// poolStatuses lists every license's base pool, then its features in the
// order of its grants.
func poolStatuses(licenses []*seatdv1.License, use policyUse) []PoolStatus {
	out := []PoolStatus{}
	for _, l := range licenses {
		features := []string{""}
		for _, gr := range l.GetGrants() {
			if !slices.Contains(features, gr.GetFeature()) {
				features = append(features, gr.GetFeature())
			}
		}
		for _, f := range features {
			u := use[l.GetId()][f]
			out = append(out, PoolStatus{LicenseID: l.GetId(), Feature: f, Reserved: u.Reserved, ReservedTaken: u.Taken, Lingering: u.Lingering})
		}
	}
	return out
}

func statusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "One screen: every license and its features with seats in use, reserved and lingering, TTL, expiry, active; the cleanup leader and last pass",
		Long: `One screen, as lmstat -a: every license with its base pool's seats in use,
then under it each of its feature grants (indented: grant id, feature and
the highest version it covers) with its own seats in use, expiry and
whether it grants seats now; then the cleanup leader and its last pass.

Apart from the seats in use, each pool shows what its site policy keeps:
RESERVED, the seats its reservations keep and how many of them members
hold now ("2 (1 taken)"; a feature's reservations span its grants, shown
on its first grant's row); LINGERING, released seats a linger rule still
holds (0 for now: seatd does not enforce linger yet). Reading them costs
a policy read per license, and a list of the live leases of each license
with reservations.

-o json prints the licenses as the API gives them (each with its grants),
and per license and pool (base pool, feature) its reserved, reservedTaken
and lingering seats.`,
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
			use, err := readPolicyUse(ctx, admin, g.tenant, licenses)
			if err != nil {
				return err
			}
			cleanup, err := admin.GetCleanupStatus(ctx, &seatdv1.GetCleanupStatusRequest{})
			notShown := ""
			if err != nil {
				if status.Code(err) != codes.PermissionDenied {
					return err
				}
				notShown = "operator key only"
			}
			if g.output != "table" {
				v := StatusView{Licenses: []json.RawMessage{}, Pools: poolStatuses(licenses, use), Cleanup: json.RawMessage("null"), CleanupNotShown: notShown}
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
			if err := statusTable(g.stdout, licenses, use, time.Now()); err != nil {
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
