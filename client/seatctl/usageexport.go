package seatctl

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// usageGroupCmd is a locked seatd's usage for its vendor: the true-up
// export (docs/concepts/license-files.md).
func usageGroupCmd(g *globals) *cobra.Command {
	return group("usage", "A locked seatd's usage for its vendor: the signed true-up export", nil, usageExportCmd(g))
}

func usageExportCmd(g *globals) *cobra.Command {
	var (
		w      window
		signed bool
		out    string
	)
	c := &cobra.Command{
		Use:   "export [--signed [--out FILE]] [--since 30d] [--until …]",
		Short: "The true-up export of a locked seatd: peak seats, denials and seat-hours per license and feature of its license file, signed by the site key (operator key)",
		Long: `export asks a locked seatd (--license-file) for its usage over a period, per
license of the license file in force and per feature of it: the most seats
held at once (above the licensed seats: the overdraft used), the
acquisitions refused for want of a seat, and the seat-hours.

With --signed it writes the usage export signed by the site key (text, to
standard output or --out FILE), the file the site sends its vendor, who
checks it against the license file with seatctl vendor verify-usage
(-o does not apply). Without it, the same rows as a table (-o json or yaml: the whole answer,
the signed export in usage_export).

The period is [--since, --until), widened to whole seconds (default: the
last 30 days, up to now).`,
		Example: "  seatctl usage export --since 2026-03-01 --until 2026-04-01\n  seatctl usage export --signed --since 2026-03-01 --until 2026-04-01 --out acme-usage-2026-03.txt",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			if out != "" && !signed {
				return usageErrorf("--out: writes the signed export only (add --signed)")
			}
			start, end, err := w.times()
			if err != nil {
				return err
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.ExportUsage, &seatdv1.ExportUsageRequest{StartTime: start, EndTime: end})
			if err != nil {
				return err
			}
			if signed {
				if out == "" {
					_, err := fmt.Fprint(g.stdout, resp.GetUsageExport())
					return err
				}
				if err := os.WriteFile(out, []byte(resp.GetUsageExport()), 0o644); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				fmt.Fprintf(c.ErrOrStderr(), "usage export of license file serial %d, %s to %s, signed by site key %s: %s\n",
					resp.GetFileSerial(), fmtUTC(resp.GetPeriodStart().AsTime()), fmtUTC(resp.GetPeriodEnd().AsTime()), resp.GetSiteKeyId(), out)
				return nil
			}
			if done, err := g.emit(resp); done {
				return err
			}
			t := newTable(g.stdout, "usage export", "license file serial "+strconv.FormatInt(resp.GetFileSerial(), 10)+", site key "+resp.GetSiteKeyId())
			t.row("period", fmtUTC(resp.GetPeriodStart().AsTime())+" to "+fmtUTC(resp.GetPeriodEnd().AsTime()))
			t.row("signed", "not written: --signed writes the signed export for the vendor")
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
			rt := newTable(g.stdout, "LICENSE", "FEATURE", "PEAK", "DENIALS", "SEAT-HOURS")
			for _, r := range resp.GetRows() {
				rt.row(r.GetLicenseId(), r.GetFeature(), strconv.Itoa(int(r.GetPeakSeats())), strconv.FormatInt(r.GetDenials(), 10),
					strconv.FormatFloat(r.GetSeatHours(), 'f', 2, 64))
			}
			return rt.flush()
		},
	}
	w.register(c, "30d")
	c.Flags().BoolVar(&signed, "signed", false, "write the usage export signed by the site key, for the vendor")
	c.Flags().StringVar(&out, "out", "", "with --signed: the file to write it to (default: standard output)")
	return c
}
