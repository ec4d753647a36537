package seatctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// GrantsView is what `seatctl grants ls -o json` prints: the license's
// grants as the API gives them (License.grants).
type GrantsView struct {
	Grants []json.RawMessage `json:"grants"`
}

// grantFlags are the settable fields of a FeatureGrant.
type grantFlags struct {
	feature     string
	version     string
	seats       int32
	overdraft   int32
	startsAt    string
	expiresAt   string
	maxBorrow   time.Duration
	maxBorrowed int32
}

func (gf *grantFlags) register(c *cobra.Command, forUpdate bool) {
	f := c.Flags()
	clears := ""
	if forUpdate {
		clears = "; \"never\" clears it"
	} else {
		f.StringVar(&gf.feature, "feature", "", "the feature's name, e.g. render (1-64 letters, digits, '.', '-', '_'; cannot change later)")
	}
	f.StringVar(&gf.version, "version", "", "highest version covered, dotted numbers (2024.2 < 2024.10); empty: every version")
	f.Int32Var(&gf.seats, "seats", 0, "concurrent seats of the grant (0 or more)")
	f.Int32Var(&gf.overdraft, "overdraft", 0, "extra seats beyond --seats")
	f.StringVar(&gf.startsAt, "starts-at", "", "no seats before this instant (RFC 3339 or YYYY-MM-DD"+clears+")")
	f.StringVar(&gf.expiresAt, "expires-at", "", "no seats from this instant; its leases end at their next heartbeat (RFC 3339 or YYYY-MM-DD"+clears+")")
	f.DurationVar(&gf.maxBorrow, "max-borrow-duration", 0, "longest a seat of the grant may be borrowed offline, e.g. 72h (0: no borrowing)")
	// --max-borrow as on licenses, for the same thing.
	f.DurationVar(&gf.maxBorrow, "max-borrow", 0, "same as --max-borrow-duration")
	_ = f.MarkHidden("max-borrow")
	f.Int32Var(&gf.maxBorrowed, "max-borrowed-seats", 0, "seats of the grant that may be borrowed at once (0: its seat limit)")
	if !forUpdate {
		_ = c.MarkFlagRequired("feature")
		_ = c.MarkFlagRequired("seats")
	}
}

// build fills a FeatureGrant from the flags set on c and returns the
// update mask paths of those flags.
func (gf *grantFlags) build(c *cobra.Command, forUpdate bool) (*seatdv1.FeatureGrant, []string, error) {
	gr := &seatdv1.FeatureGrant{}
	var mask []string
	set := func(path string, apply func() error, flags ...string) error {
		for _, flag := range flags {
			if c.Flags().Changed(flag) {
				mask = append(mask, path)
				return apply()
			}
		}
		return nil
	}
	instant := func(flag, value string, dst **timestamppb.Timestamp) func() error {
		return func() error {
			if forUpdate && value == "never" {
				return nil // in the mask, unset: cleared
			}
			t, err := parseInstant(value)
			if err != nil {
				return usageErrorf("--%s: %v", flag, err)
			}
			*dst = timestamppb.New(t)
			return nil
		}
	}
	errs := []error{
		set("feature", func() error { gr.Feature = gf.feature; return nil }, "feature"),
		set("version", func() error { gr.Version = gf.version; return nil }, "version"),
		set("seats", func() error { gr.Seats = gf.seats; return nil }, "seats"),
		set("overdraft", func() error { gr.Overdraft = gf.overdraft; return nil }, "overdraft"),
		set("starts_at", instant("starts-at", gf.startsAt, &gr.StartsAt), "starts-at"),
		set("expires_at", instant("expires-at", gf.expiresAt, &gr.ExpiresAt), "expires-at"),
		set("max_borrow_duration", func() error { gr.MaxBorrowDuration = durationpb.New(gf.maxBorrow); return nil },
			"max-borrow-duration", "max-borrow"),
		set("max_borrowed_seats", func() error { gr.MaxBorrowedSeats = gf.maxBorrowed; return nil }, "max-borrowed-seats"),
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return gr, mask, nil
}

func grantsCmd(g *globals) *cobra.Command {
	return group("grants", "Sell features: add, list, change and delete a license's feature grants", []string{"grant"},
		grantCreateCmd(g), grantListCmd(g), grantUpdateCmd(g), grantDeleteCmd(g))
}

func grantCreateCmd(g *globals) *cobra.Command {
	var gf grantFlags
	c := &cobra.Command{
		Use:   "create LICENSE_ID --feature F --seats N [--version V] [--expires-at …] ...",
		Short: "Add a feature grant to a license (a new feature, or a renewal beside an older grant of it)",
		Long: `Add a feature grant to a license: seats of one feature, up to one version,
for a while. A request for the feature at version v takes a seat of a grant
that covers v and is current, the one that expires first among those with a
free seat. The license's own --seats stay its base pool.`,
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		Example: "  seatctl grants create lic_123 --feature render --version 2024 --seats 5 --expires-at 2026-12-31\n" +
			"  seatctl grants create lic_123 --feature render --version 2025 --seats 5 --starts-at 2026-12-01",
		RunE: func(c *cobra.Command, args []string) error {
			gr, _, err := gf.build(c, false)
			if err != nil {
				return err
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.CreateFeatureGrant, &seatdv1.CreateFeatureGrantRequest{
				LicenseId: args[0], Grant: gr, TenantId: g.tenant,
			})
			if err != nil {
				return err
			}
			return g.printGrant(resp.GetGrant())
		},
	}
	gf.register(c, false)
	return c
}

func grantListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "ls LICENSE_ID",
		Aliases:           []string{"list"},
		Short:             "List a license's feature grants with their seats in use (by feature, then the order seats are taken in)",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicense, &seatdv1.GetLicenseRequest{LicenseId: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			grants := resp.GetLicense().GetGrants()
			if g.output != "table" {
				v := GrantsView{Grants: []json.RawMessage{}}
				for _, gr := range grants {
					raw, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(gr)
					if err != nil {
						return err
					}
					v.Grants = append(v.Grants, raw)
				}
				_, err = g.emitJSON(v)
				return err
			}
			return grantTable(g.stdout, resp.GetLicense(), time.Now())
		},
	}
}

func grantUpdateCmd(g *globals) *cobra.Command {
	var gf grantFlags
	c := &cobra.Command{
		Use:               "update LICENSE_ID GRANT_ID [--seats N] [--expires-at …] ...",
		Short:             "Change the grant's fields given as flags (only those; the feature cannot change)",
		Long:              "Change the grant's fields given as flags, only those. GRANT_ID is the grant's id (LICENSE_ID.1a2b3c4d) or its last part (1a2b3c4d). Fewer seats than are in use ends no lease: new ones wait until use is under the new limit.",
		Args:              exactArgs("LICENSE_ID", "GRANT_ID"),
		ValidArgsFunction: g.completeGrants,
		Example:           "  seatctl grants update lic_123 lic_123.1a2b3c4d --seats 8\n  seatctl grants update lic_123 1a2b3c4d --expires-at never",
		RunE: func(c *cobra.Command, args []string) error {
			gr, mask, err := gf.build(c, true)
			if err != nil {
				return err
			}
			if len(mask) == 0 {
				return usageErrorf("nothing to change: give at least one of --version, --seats, --overdraft, --starts-at, --expires-at, --max-borrow-duration, --max-borrowed-seats")
			}
			gr.Id = grantID(args[0], args[1])
			resp, err := call(g, c, seatdv1.AdminServiceClient.UpdateFeatureGrant, &seatdv1.UpdateFeatureGrantRequest{
				LicenseId: args[0], Grant: gr, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}, TenantId: g.tenant,
			})
			if err != nil {
				return err
			}
			return g.printGrant(resp.GetGrant())
		},
	}
	gf.register(c, true)
	return c
}

func grantDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "delete LICENSE_ID GRANT_ID",
		Aliases:           []string{"rm"},
		Short:             "Delete a feature grant: its live leases are revoked, history stays",
		Long:              "Delete a feature grant: its live leases are revoked (each gets its usage event), history stays. GRANT_ID is the grant's id (LICENSE_ID.1a2b3c4d) or its last part (1a2b3c4d).",
		Args:              exactArgs("LICENSE_ID", "GRANT_ID"),
		ValidArgsFunction: g.completeGrants,
		RunE: func(c *cobra.Command, args []string) error {
			id := grantID(args[0], args[1])
			resp, err := call(g, c, seatdv1.AdminServiceClient.DeleteFeatureGrant, &seatdv1.DeleteFeatureGrantRequest{
				LicenseId: args[0], GrantId: id, TenantId: g.tenant,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "deleted %s (%d live lease(s) revoked)\n", id, resp.GetRevokedLeases())
			return err
		},
	}
}

// grantID is a grant's full id from the GRANT_ID argument: as given, or
// its last part (after the license id and the dot) completed.
func grantID(licenseID, arg string) string {
	if strings.Contains(arg, ".") {
		return arg
	}
	return licenseID + "." + arg
}

// printGrant prints one grant: -o json/yaml the FeatureGrant itself, else
// one field per line.
func (g *globals) printGrant(gr *seatdv1.FeatureGrant) error {
	if done, err := g.emit(gr); done {
		return err
	}
	t := newTable(g.stdout, "FIELD", "VALUE")
	t.row("id", gr.GetId())
	t.row("license", gr.GetLicenseId())
	t.row("feature", gr.GetFeature())
	t.row("version", versionLabel(gr.GetVersion()))
	t.row("seats in use", fmt.Sprint(gr.GetSeatsInUse()))
	t.row("seats", fmt.Sprint(gr.GetSeats()))
	t.row("overdraft", fmt.Sprint(gr.GetOverdraft()))
	t.row("starts", fmtTime(gr.GetStartsAt()))
	t.row("expires", fmtTime(gr.GetExpiresAt()))
	t.row("max borrow", grantMaxBorrow(gr))
	t.row("created", fmtTime(gr.GetCreateTime()))
	t.row("updated", fmtTime(gr.GetUpdateTime()))
	return t.flush()
}

// grantTable lists a license's grants, one per line.
func grantTable(out io.Writer, l *seatdv1.License, now time.Time) error {
	grants := l.GetGrants()
	t := newTable(out, "GRANT", "FEATURE", "VERSION", "IN USE", "SEATS", "STARTS", "EXPIRES", "MAX BORROW", "NOW")
	for _, gr := range grants {
		t.row(gr.GetId(), gr.GetFeature(), versionLabel(gr.GetVersion()), fmt.Sprint(gr.GetSeatsInUse()), seatsLabel(gr.GetSeats(), gr.GetOverdraft()),
			fmtTime(gr.GetStartsAt()), fmtTime(gr.GetExpiresAt()), grantMaxBorrow(gr), grantState(l, gr, now))
	}
	if len(grants) == 0 {
		t.row("(no feature grants)")
	}
	return t.flush()
}

// versionLabel is a grant's version for people: "all" when it covers
// every version.
func versionLabel(v string) string {
	if v == "" {
		return "all"
	}
	return v
}

// seatsLabel is "5", or "5 +2" with an overdraft.
func seatsLabel(seats, overdraft int32) string {
	if overdraft > 0 {
		return fmt.Sprintf("%d +%d", seats, overdraft)
	}
	return fmt.Sprint(seats)
}

// grantState says whether the grant grants seats now: "yes", "no" (its
// license is switched off), "from <start>" or "expired" (it or its
// license).
func grantState(l *seatdv1.License, gr *seatdv1.FeatureGrant, now time.Time) string {
	switch end := grantExpiry(l, gr); {
	case end != nil && !now.Before(end.AsTime()):
		return "expired"
	case gr.GetStartsAt() != nil && now.Before(gr.GetStartsAt().AsTime()):
		return "from " + fmtTime(gr.GetStartsAt())
	case !l.GetActive():
		return "no"
	}
	return "yes"
}

// grantExpiry is when a grant stops granting: the earlier of its own
// expiry and its license's.
func grantExpiry(l *seatdv1.License, gr *seatdv1.FeatureGrant) *timestamppb.Timestamp {
	le, ge := l.GetExpiresAt(), gr.GetExpiresAt()
	if ge == nil || (le != nil && le.AsTime().Before(ge.AsTime())) {
		return le
	}
	return ge
}

// grantMaxBorrow is maxBorrow for a grant (early return is the license's).
func grantMaxBorrow(gr *seatdv1.FeatureGrant) string {
	return maxBorrow(&seatdv1.License{MaxBorrowDuration: gr.GetMaxBorrowDuration(), MaxBorrowedSeats: gr.GetMaxBorrowedSeats()})
}

// completeGrants offers license ids, then that license's grant ids (with
// feature and version), to shell completion.
func (g *globals) completeGrants(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return g.completeLicenses(c, args, toComplete)
	}
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicense, &seatdv1.GetLicenseRequest{LicenseId: args[0], TenantId: g.tenant})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, gr := range resp.GetLicense().GetGrants() {
		out = append(out, cobra.CompletionWithDesc(gr.GetId(), featureVersion(gr)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
