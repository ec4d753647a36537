package seatctl

import (
	"strconv"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// licenseFileCmd is a locked seatd's license file: which is in force, and
// a reload after the file was replaced (docs/concepts/license-files.md).
func licenseFileCmd(g *globals) *cobra.Command {
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the license file in force: serial, customer, dates, the site key it names",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicenseFile, &seatdv1.GetLicenseFileRequest{})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp.GetLicenseFile()); done {
				return err
			}
			return g.printLicenseFileInForce(resp.GetLicenseFile(), "")
		},
	}
	reload := &cobra.Command{
		Use:   "reload",
		Short: "Read the license file again (as SIGHUP does): a newer file is in force at once (operator key)",
		Long: `reload asks seatd to read its --license-file again, as SIGHUP does. A newer
file for this site is in force at once; the file in force again changes
nothing. A file seatd refuses (tampered, for another site, past its
not_after, not newer than the one in force) leaves the file in force, and
the error says why (LICENSE_FILE_REFUSED, its cause).`,
		Args: exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ReloadLicenseFile, &seatdv1.ReloadLicenseFileRequest{})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			outcome := "unchanged: the file in force again"
			if resp.GetChanged() {
				outcome = "reloaded: in force now"
			}
			return g.printLicenseFileInForce(resp.GetLicenseFile(), outcome)
		},
	}
	return group("license-file", "A locked seatd's license file: the one in force, and a reload", []string{"lf"}, show, reload)
}

func (g *globals) printLicenseFileInForce(f *seatdv1.LicenseFile, outcome string) error {
	t := newTable(g.stdout, "serial", strconv.FormatInt(f.GetSerial(), 10))
	if outcome != "" {
		t.row("reload", outcome)
	}
	t.row("customer", f.GetCustomer())
	t.row("issued", fmtTime(f.GetIssuedAt()))
	t.row("not after", fmtTime(f.GetNotAfter()))
	t.row("site key", f.GetSiteKeyId())
	t.row("vendor key", f.GetVendorKeyId())
	t.row("licenses", strconv.Itoa(int(f.GetLicenseCount())))
	t.row("in force since", fmtTime(f.GetInForceSince()))
	t.row("sha256", f.GetSha256())
	return t.flush()
}
