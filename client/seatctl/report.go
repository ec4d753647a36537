package seatctl

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// window is a --since/--until pair.
type window struct {
	since, until string
}

func (w *window) register(c *cobra.Command, defSince string) {
	c.Flags().StringVar(&w.since, "since", defSince, "window start: an age (30d, 12h) or an RFC 3339 time / YYYY-MM-DD")
	c.Flags().StringVar(&w.until, "until", "", "window end, same forms (default now)")
}

func (w *window) times() (start, end *timestamppb.Timestamp, err error) {
	now := time.Now()
	s, err := parseSince(w.since, now)
	if err != nil {
		return nil, nil, usageErrorf("--since: %v", err)
	}
	start = timestamppb.New(s)
	if w.until != "" {
		u, err := parseSince(w.until, now)
		if err != nil {
			return nil, nil, usageErrorf("--until: %v", err)
		}
		end = timestamppb.New(u)
	}
	return start, end, nil
}

// ofFeature is a report's title's cut: " of feature F", or nothing.
func ofFeature(feature string) string {
	if feature == "" {
		return ""
	}
	return " of feature " + feature
}

func reportCmd(g *globals) *cobra.Command {
	return group("report", "Zombie and usage reports over a time window", nil, zombiesCmd(g), usageCmd(g))
}

func zombiesCmd(g *globals) *cobra.Command {
	var w window
	var top int32
	var feature string
	c := &cobra.Command{
		Use:   "zombies [--since 30d] [--until …] [--top 20] [--feature F]",
		Short: "Zombies cleaned per day, the licenses (each feature apart from the base pool) with the most, and the mean time to cleanup",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			start, end, err := w.times()
			if err != nil {
				return err
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetZombieReport, &seatdv1.GetZombieReportRequest{
				TenantId: g.tenant, StartTime: start, EndTime: end, TopLimit: top, Feature: feature,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			out := g.stdout
			fmt.Fprintf(out, "zombies %s … %s%s: %d cleaned, mean %.1f min from last heartbeat to cleanup\n\n",
				fmtTime(resp.GetStartTime()), fmtTime(resp.GetEndTime()), ofFeature(feature), resp.GetZombiesTotal(), resp.GetMeanMinutesToCleanup())
			t := newTable(out, "DAY (UTC)", "ZOMBIES", "LICENSES")
			for _, d := range resp.GetDays() {
				t.row(d.GetDate(), fmt.Sprint(d.GetZombiesCleaned()), fmt.Sprint(d.GetAffectedLicenses()))
			}
			if len(resp.GetDays()) == 0 {
				t.row("(none)")
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			t = newTable(out, "LICENSE", "NAME", "FEATURE", "ZOMBIES", "LEASES", "ZOMBIE %")
			for _, l := range resp.GetTopLicenses() {
				t.row(l.GetLicenseId(), l.GetLicenseName(), l.GetFeature(), fmt.Sprint(l.GetZombieCount()), fmt.Sprint(l.GetLeaseCount()),
					fmt.Sprintf("%.1f", l.GetZombiePercentage()))
			}
			if len(resp.GetTopLicenses()) == 0 {
				t.row("(none)")
			}
			return t.flush()
		},
	}
	w.register(c, "7d")
	c.Flags().Int32Var(&top, "top", 0, "how many licenses to list by zombie count, 1-100 (default 20)")
	c.Flags().StringVar(&feature, "feature", "", "only the zombies of this feature's grants")
	return c
}

// usageCmd is the report that sizes a purchase: per license and bucket the
// peak of seats held at once, seat-hours and denials, then the users.
func usageCmd(g *globals) *cobra.Command {
	var (
		w       window
		license string
		feature string
		by      string
		users   int32
	)
	c := &cobra.Command{
		Use:   "usage [--license ID] [--feature F] [--since 30d] [--until …] [--by day|hour] [--users 20]",
		Short: "Peak seats, seat-hours, acquisitions, denials and queue waits per license, feature and day or hour; seat-hours per user",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			start, end, err := w.times()
			if err != nil {
				return err
			}
			bucket := seatdv1.UsageBucket_USAGE_BUCKET_DAY
			switch by {
			case "day":
			case "hour":
				bucket = seatdv1.UsageBucket_USAGE_BUCKET_HOUR
			default:
				return usageErrorf("--by must be day or hour, not %q", by)
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetUsageReport, &seatdv1.GetUsageReportRequest{
				TenantId: g.tenant, LicenseId: license, StartTime: start, EndTime: end, Bucket: bucket, UserLimit: users, Feature: feature,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			out := g.stdout
			fmt.Fprintf(out, "usage %s … %s%s, by %s\n\n", fmtTime(resp.GetStartTime()), fmtTime(resp.GetEndTime()), ofFeature(feature), by)
			t := newTable(out, "LICENSE", "FEATURE", "FROM (UTC)", "PEAK", "SEAT-HOURS", "ACQUIRED", "DENIED", "BY POLICY", "USERS", "WAITS", "MEAN WAIT")
			for _, r := range resp.GetRows() {
				t.row(r.GetLicenseId(), r.GetFeature(), fmtTime(r.GetBucketStart()), fmt.Sprint(r.GetPeakSeats()),
					fmt.Sprintf("%.2f", r.GetSeatHours()), fmt.Sprint(r.GetAcquisitions()), fmt.Sprint(r.GetDenials()),
					policyDenials(r.GetDenialsByReason()), fmt.Sprint(r.GetDistinctUsers()), fmt.Sprint(r.GetQueueWaits()),
					fmtDuration(r.GetMeanQueueWait()))
			}
			if len(resp.GetRows()) == 0 {
				t.row("(none)")
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			t = newTable(out, "USER", "SEAT-HOURS", "SESSIONS")
			for _, u := range resp.GetUsers() {
				t.row(u.GetUser(), fmt.Sprintf("%.2f", u.GetSeatHours()), fmt.Sprint(u.GetSessions()))
			}
			if len(resp.GetUsers()) == 0 {
				t.row("(none)")
			}
			return t.flush()
		},
	}
	w.register(c, "30d")
	c.Flags().StringVar(&license, "license", "", "only this license (its history too, if deleted)")
	c.Flags().StringVar(&feature, "feature", "", "only the leases of this feature's grants (default: every lease, a row per license and feature; FEATURE - is the base pool)")
	c.Flags().StringVar(&by, "by", "day", "bucket: day or hour (UTC)")
	c.Flags().Int32Var(&users, "users", 0, "how many users to list by seat-hours, 1-1000 (default 100)")
	return c
}

// policyDenials lists the denials of a usage row the site policy made,
// by reason ("USER_LIMIT 2, EXCLUDED 1", by count then reason; "-" for
// none): DENIED less these were SEATS_EXHAUSTED.
func policyDenials(byReason map[string]int64) string {
	var reasons []string
	for r := range byReason {
		if r != "SEATS_EXHAUSTED" {
			reasons = append(reasons, r)
		}
	}
	if len(reasons) == 0 {
		return "-"
	}
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(byReason[b], byReason[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %d", r, byReason[r])
	}
	return strings.Join(parts, ", ")
}
