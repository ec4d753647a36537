package seatctl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// pageSize is what list commands ask for per page; they walk every page.
const pageSize = 1000

var strategies = map[string]seatdv1.LeasingStrategy{
	"fingerprint": seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_FINGERPRINT,
	"user":        seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_USER,
	"hostname":    seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_HOSTNAME,
	"acquisition": seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_ACQUISITION,
}

func strategyName(s seatdv1.LeasingStrategy) string {
	for k, v := range strategies {
		if v == s {
			return k
		}
	}
	return "fingerprint"
}

// licenseFlags are the settable fields of a License.
type licenseFlags struct {
	name          string
	seats         int32
	overdraft     int32
	ttl           time.Duration
	revivalWindow time.Duration
	strategy      string
	expiresAt     string
	active        bool
	metadata      map[string]string
	maxBorrow     time.Duration
	maxBorrowed   int32
	earlyReturn   bool
}

func (lf *licenseFlags) register(c *cobra.Command, forUpdate bool) {
	f := c.Flags()
	f.StringVar(&lf.name, "name", "", "human name, e.g. \"ACME Corp — CAD Pro\"")
	f.Int32Var(&lf.seats, "seats", 0, "concurrent seats (at least 1)")
	f.Int32Var(&lf.overdraft, "overdraft", 0, "extra seats beyond --seats")
	f.DurationVar(&lf.ttl, "ttl", 0, "lease TTL without a heartbeat (default on create: 6m)")
	f.DurationVar(&lf.revivalWindow, "revival-window", 0, "a heartbeat this late revives the lease while a seat is free")
	f.StringVar(&lf.strategy, "strategy", "", "which acquisitions share a lease: fingerprint, user, hostname or acquisition")
	f.StringVar(&lf.expiresAt, "expires-at", "", "no new seats after this instant (RFC 3339 or YYYY-MM-DD; \"never\" on update clears it)")
	f.StringToStringVar(&lf.metadata, "metadata", nil, "key=value pairs (replaces all metadata on update)")
	f.DurationVar(&lf.maxBorrow, "max-borrow", 0, "longest a seat may be borrowed for offline use, e.g. 72h (0: no borrowing; at most 720h)")
	f.Int32Var(&lf.maxBorrowed, "max-borrowed-seats", 0, "seats that may be borrowed at once (0: as many as the seat limit, seats + overdraft)")
	f.BoolVar(&lf.earlyReturn, "allow-early-return", false, "a borrowed seat may be returned before its deadline; its certificate is then listed as returned and still counts against --max-borrowed-seats until it expires")
	if forUpdate {
		f.BoolVar(&lf.active, "active", true, "whether the license grants new seats (--active=false switches it off)")
	} else {
		f.BoolVar(&lf.active, "inactive", false, "create the license switched off")
	}
	_ = c.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions([]string{"fingerprint", "user", "hostname", "acquisition"}, cobra.ShellCompDirectiveNoFileComp))
}

// build fills a License from the flags set on c and returns the update mask
// paths of those flags.
func (lf *licenseFlags) build(c *cobra.Command, forUpdate bool) (*seatdv1.License, []string, error) {
	l := &seatdv1.License{}
	var mask []string
	set := func(flag, path string, apply func() error) error {
		if !c.Flags().Changed(flag) {
			return nil
		}
		mask = append(mask, path)
		return apply()
	}
	errs := []error{
		set("name", "name", func() error { l.Name = lf.name; return nil }),
		set("seats", "seats", func() error { l.Seats = lf.seats; return nil }),
		set("overdraft", "overdraft", func() error { l.Overdraft = lf.overdraft; return nil }),
		set("ttl", "lease_ttl", func() error { l.LeaseTtl = durationpb.New(lf.ttl); return nil }),
		set("revival-window", "revival_window", func() error { l.RevivalWindow = durationpb.New(lf.revivalWindow); return nil }),
		set("strategy", "leasing_strategy", func() error {
			s, ok := strategies[strings.ToLower(lf.strategy)]
			if !ok {
				return usageErrorf("--strategy %q: want fingerprint, user, hostname or acquisition", lf.strategy)
			}
			l.LeasingStrategy = s
			return nil
		}),
		set("expires-at", "expires_at", func() error {
			if forUpdate && lf.expiresAt == "never" {
				return nil
			}
			t, err := parseInstant(lf.expiresAt)
			if err != nil {
				return usageErrorf("--expires-at: %v", err)
			}
			l.ExpiresAt = timestamppb.New(t)
			return nil
		}),
		set("metadata", "metadata", func() error { l.Metadata = lf.metadata; return nil }),
		set("max-borrow", "max_borrow_duration", func() error { l.MaxBorrowDuration = durationpb.New(lf.maxBorrow); return nil }),
		set("max-borrowed-seats", "max_borrowed_seats", func() error { l.MaxBorrowedSeats = lf.maxBorrowed; return nil }),
		set("allow-early-return", "allow_early_return", func() error { l.AllowEarlyReturn = lf.earlyReturn; return nil }),
	}
	if forUpdate {
		errs = append(errs, set("active", "active", func() error { l.Active = proto.Bool(lf.active); return nil }))
	} else if lf.active {
		l.Active = proto.Bool(false)
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return l, mask, nil
}

func licensesCmd(g *globals) *cobra.Command {
	return group("licenses", "Create, list, show, change and delete licenses", []string{"license", "lic"},
		licenseCreateCmd(g), licenseListCmd(g), licenseGetCmd(g), licenseUpdateCmd(g), licenseDeleteCmd(g))
}

func licenseCreateCmd(g *globals) *cobra.Command {
	var lf licenseFlags
	c := &cobra.Command{
		Use:     "create --seats N [--name NAME] [--ttl 6m] ...",
		Short:   "Create a license; prints it with its key (the secret to give the customer)",
		Args:    exactArgs(),
		Example: "  seatctl licenses create --name \"ACME CAD\" --seats 10 --ttl 10m --overdraft 2",
		RunE: func(c *cobra.Command, _ []string) error {
			l, _, err := lf.build(c, false)
			if err != nil {
				return err
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.CreateLicense, &seatdv1.CreateLicenseRequest{License: l, TenantId: g.tenant})
			if err != nil {
				return err
			}
			return g.printLicense(resp.GetLicense())
		},
	}
	lf.register(c, false)
	return c
}

func licenseListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's licenses (every page), with the features they hold",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			all, err := g.allLicenses(c)
			if err != nil {
				return err
			}
			if done, err := g.emit(&seatdv1.ListLicensesResponse{Licenses: all}); done {
				return err
			}
			t := newTable(g.stdout, "ID", "NAME", "IN USE", "SEATS", "OVERDRAFT", "TTL", "STRATEGY", "MAX BORROW", "EXPIRES", "ACTIVE", "FEATURES")
			for _, l := range all {
				t.row(l.GetId(), l.GetName(), fmt.Sprint(l.GetSeatsInUse()), fmt.Sprint(l.GetSeats()), fmt.Sprint(l.GetOverdraft()),
					fmtDuration(l.GetLeaseTtl()), strategyName(l.GetLeasingStrategy()), maxBorrow(l), fmtTime(l.GetExpiresAt()), yesNo(l.GetActive()),
					featureNames(l))
			}
			return t.flush()
		},
	}
}

// allLicenses walks every page of ListLicenses.
func (g *globals) allLicenses(c *cobra.Command) ([]*seatdv1.License, error) {
	admin, ctx, cancel, err := g.admin(c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var all []*seatdv1.License
	token := ""
	for {
		resp, err := admin.ListLicenses(ctx, &seatdv1.ListLicensesRequest{TenantId: g.tenant, PageSize: pageSize, PageToken: token})
		if err != nil {
			return nil, err
		}
		all = append(all, resp.GetLicenses()...)
		if token = resp.GetNextPageToken(); token == "" {
			return all, nil
		}
	}
}

func licenseGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "get LICENSE_ID",
		Short:             "Show one license, with its key and its feature grants",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicense, &seatdv1.GetLicenseRequest{LicenseId: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			return g.printLicense(resp.GetLicense())
		},
	}
}

func licenseUpdateCmd(g *globals) *cobra.Command {
	var lf licenseFlags
	c := &cobra.Command{
		Use:               "update LICENSE_ID [--seats N] [--active=false] ...",
		Short:             "Change the fields given as flags (only those)",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		Example:           "  seatctl licenses update lic_123 --seats 20 --ttl 5m\n  seatctl licenses update lic_123 --active=false",
		RunE: func(c *cobra.Command, args []string) error {
			l, mask, err := lf.build(c, true)
			if err != nil {
				return err
			}
			if len(mask) == 0 {
				return usageErrorf("nothing to change: give at least one of --name, --seats, --overdraft, --ttl, --revival-window, --strategy, --expires-at, --active, --metadata, --max-borrow, --max-borrowed-seats, --allow-early-return")
			}
			l.Id = args[0]
			resp, err := call(g, c, seatdv1.AdminServiceClient.UpdateLicense, &seatdv1.UpdateLicenseRequest{
				License: l, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}, TenantId: g.tenant,
			})
			if err != nil {
				return err
			}
			return g.printLicense(resp.GetLicense())
		},
	}
	lf.register(c, true)
	return c
}

func licenseDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "delete LICENSE_ID",
		Aliases:           []string{"rm"},
		Short:             "Delete a license: its live leases are revoked, its key stops working, history stays",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.DeleteLicense, &seatdv1.DeleteLicenseRequest{LicenseId: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "deleted %s (%d live lease(s) revoked)\n", args[0], resp.GetRevokedLeases())
			return err
		},
	}
}

// printLicense prints one license: -o json/yaml the License itself, else
// one field per line.
func (g *globals) printLicense(l *seatdv1.License) error {
	if done, err := g.emit(l); done {
		return err
	}
	t := newTable(g.stdout, "FIELD", "VALUE")
	t.row("id", l.GetId())
	t.row("name", l.GetName())
	t.row("key", l.GetKey())
	t.row("tenant", l.GetTenantId())
	t.row("seats in use", fmt.Sprint(l.GetSeatsInUse()))
	t.row("seats", fmt.Sprint(l.GetSeats()))
	t.row("overdraft", fmt.Sprint(l.GetOverdraft()))
	t.row("lease ttl", fmtDuration(l.GetLeaseTtl()))
	t.row("revival window", fmtDuration(l.GetRevivalWindow()))
	t.row("strategy", strategyName(l.GetLeasingStrategy()))
	t.row("max borrow", maxBorrow(l))
	t.row("active", yesNo(l.GetActive()))
	t.row("expires", fmtTime(l.GetExpiresAt()))
	keys := make([]string, 0, len(l.GetMetadata()))
	for k := range l.GetMetadata() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.row("metadata "+k, l.GetMetadata()[k])
	}
	t.row("created", fmtTime(l.GetCreateTime()))
	t.row("updated", fmtTime(l.GetUpdateTime()))
	if err := t.flush(); err != nil {
		return err
	}
	if len(l.GetGrants()) == 0 {
		return nil
	}
	fmt.Fprintln(g.stdout, "\nfeature grants (the seats above are the base pool):")
	return grantTable(g.stdout, l, time.Now())
}

// featureNames are the features a license holds grants of, in the API's
// order, each once: "render, sim".
func featureNames(l *seatdv1.License) string {
	var names []string
	for _, gr := range l.GetGrants() {
		if !slices.Contains(names, gr.GetFeature()) {
			names = append(names, gr.GetFeature())
		}
	}
	return strings.Join(names, ", ")
}

// maxBorrow is how long a seat may be borrowed ("off": not at all), with
// the borrowed-seat limit when there is one: "3d (2 seats)".
func maxBorrow(l *seatdv1.License) string {
	d := l.GetMaxBorrowDuration().AsDuration()
	switch n := l.GetMaxBorrowedSeats(); {
	case d <= 0:
		return "off"
	case l.GetAllowEarlyReturn():
		return maxBorrow(&seatdv1.License{MaxBorrowDuration: l.GetMaxBorrowDuration(), MaxBorrowedSeats: n}) + ", early return"
	case n == 1:
		return fmtDuration(l.GetMaxBorrowDuration()) + " (1 seat)"
	case n > 1:
		return fmt.Sprintf("%s (%d seats)", fmtDuration(l.GetMaxBorrowDuration()), n)
	}
	return fmtDuration(l.GetMaxBorrowDuration())
}

// completeLicenses offers license ids (with names) to shell completion.
func (g *globals) completeLicenses(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := g.allLicenses(c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]cobra.Completion, 0, len(all))
	for _, l := range all {
		out = append(out, cobra.CompletionWithDesc(l.GetId(), l.GetName()))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
