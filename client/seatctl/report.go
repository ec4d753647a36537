package seatctl

import (
	"fmt"
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

func reportCmd(g *globals) *cobra.Command {
	return group("report", "Zombie and usage reports over a time window", nil, zombiesCmd(g))
}

func zombiesCmd(g *globals) *cobra.Command {
	var w window
	var top int32
	c := &cobra.Command{
		Use:   "zombies [--since 30d] [--until …] [--top 20]",
		Short: "Zombies cleaned per day, the licenses with the most, and the mean time to cleanup",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			start, end, err := w.times()
			if err != nil {
				return err
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetZombieReport, &seatdv1.GetZombieReportRequest{
				TenantId: g.tenant, StartTime: start, EndTime: end, TopLimit: top,
			})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			out := g.stdout
			fmt.Fprintf(out, "zombies %s … %s: %d cleaned, mean %.1f min from last heartbeat to cleanup\n\n",
				fmtTime(resp.GetStartTime()), fmtTime(resp.GetEndTime()), resp.GetZombiesTotal(), resp.GetMeanMinutesToCleanup())
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
			t = newTable(out, "LICENSE", "NAME", "ZOMBIES", "LEASES", "ZOMBIE %")
			for _, l := range resp.GetTopLicenses() {
				t.row(l.GetLicenseId(), l.GetLicenseName(), fmt.Sprint(l.GetZombieCount()), fmt.Sprint(l.GetLeaseCount()),
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
	return c
}
