package seatctl

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/seatd/seatd/server/licensefile"
)

func vendorCmd(g *globals) *cobra.Command {
	return group("vendor", "A vendor's tools for air-gapped sites: its key, signed license files, usage exports (no seatd needed)", nil,
		vendorKeygenCmd(g), vendorSignCmd(g), vendorInspectCmd(g), vendorVerifyUsageCmd(g))
}

func vendorKeygenCmd(g *globals) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "keygen -o DIR",
		Short: "Make the vendor's Ed25519 key pair: DIR/vendor.key (private, 0600) and DIR/vendor.pub",
		Long: `keygen makes the key that signs license files: DIR/vendor.key, the private
key (PEM PKCS #8, mode 0600: keep it offline, it makes any license) and
DIR/vendor.pub, the public key that every seatd serving your files is given
(--vendor-key) and products may embed. It never replaces an existing key.`,
		Example: "  seatctl vendor keygen -o ~/acme-vendor",
		Args:    exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			kid, keyPath, pubPath, err := writeKeyPair(dir, "vendor")
			if err != nil {
				return err
			}
			t := newTable(g.stdout, "KID", "PRIVATE KEY (keep offline)", "PUBLIC KEY (ship with seatd)")
			t.row(kid, keyPath, pubPath)
			return t.flush()
		},
	}
	c.Flags().StringVarP(&dir, "output", "o", "", "directory to write vendor.key and vendor.pub into (made if missing)")
	return c
}

// entitlements is what a vendor writes for vendor sign (YAML or JSON):
// the license file's terms, less what the site request and the clock give
// (the site key, the host's identity, issued_at).
type entitlements struct {
	Serial   int64     `json:"serial"`
	Customer string    `json:"customer"`
	NotAfter time.Time `json:"not_after"`
	// BindHost binds the file to the site's host too: "hostname" or
	// "machine-id", whose value the request carries.
	BindHost licensefile.HostKind  `json:"bind_host,omitempty"`
	Licenses []licensefile.License `json:"licenses"`
}

func readEntitlements(path string) (*entitlements, error) {
	data, err := readInput("--entitlements", path)
	if err != nil {
		return nil, err
	}
	// JSON is YAML, so one reader takes both; strict YAML refuses a key
	// given twice, which plain YAML would let the later one win.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		// The YAML reader lists its errors one per line: one line here.
		return nil, usageErrorf("--entitlements %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	var e entitlements
	if err := licensefile.DecodeStrict(j, &e); err != nil {
		return nil, usageErrorf("--entitlements %s: %v", path, err)
	}
	return &e, nil
}

func vendorSignCmd(g *globals) *cobra.Command {
	var keyPath, requestPath, entPath, out string
	c := &cobra.Command{
		Use:   "sign --key vendor.key --request request.txt --entitlements entitlements.yaml [-o site.lic]",
		Short: "Sign a license file for the site whose request is given, with the terms of an entitlements file",
		Long: `sign writes a license file (stdout without -o): the site's key, from its
request (verified: signed by the key it carries), and the terms of the
entitlements file (YAML or JSON), signed with the vendor's key. The file is
refused unless seatd would accept every value in it.

The entitlements file:

  serial: 7                       # required: higher than any file this site had
  customer: Acme Fabrication
  not_after: 2027-03-01T00:00:00Z # required: the file is refused from then on
  bind_host: machine-id           # optional: hostname or machine-id, from the request
  licenses:
    - id: cad                     # yours, kept by every renewal (a-z 0-9 - _)
      name: ACME CAD
      seats: 20
      overdraft: 2
      lease_ttl: 6m               # default 6m
      leasing_strategy: fingerprint  # or user, hostname, acquisition
      max_borrow_duration: 72h    # 0 or absent: no borrowing
      max_borrowed_seats: 5
      expires_at: 2027-03-01T00:00:00Z
      grants:
        - id: render-2024         # yours, unique in its license
          feature: render
          version: "2024.2"       # quoted: 2024.10 unquoted is the number 2024.1
          seats: 5
          expires_at: 2026-09-01T00:00:00Z

Times are RFC 3339; durations as Go writes them (6m, 72h, 1h30m). A field
the format does not have is refused, never ignored.`,
		Example: "  seatctl vendor sign --key vendor.key --request request.txt --entitlements acme.yaml -o acme-site.lic",
		Args:    exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			priv, err := readPrivateKey("--key", keyPath)
			if err != nil {
				return err
			}
			reqData, err := readInput("--request", requestPath)
			if err != nil {
				return err
			}
			req, err := licensefile.VerifyRequest(reqData)
			if err != nil {
				return refusedf("--request %s: %w", requestPath, err)
			}
			ent, err := readEntitlements(entPath)
			if err != nil {
				return err
			}
			f, err := ent.file(req, g.clock())
			if err != nil {
				return usageErrorf("--entitlements %s: %v", entPath, err)
			}
			data, err := licensefile.Sign(f, priv)
			if errors.Is(err, licensefile.ErrInvalid) {
				return usageErrorf("--entitlements %s: %v", entPath, err)
			} else if err != nil {
				return err
			}
			if err := g.writeOutput(out, data); err != nil {
				return err
			}
			if toStdout(out) {
				return nil
			}
			_, err = fmt.Fprintf(g.stdout, "%s: serial %d for %s (site %q, site key %s), %d license(s), not after %s, signed by vendor key %s\n",
				out, f.Serial, f.Customer, req.Name, f.SiteKey.Kid, len(f.Licenses), fmtUTC(f.NotAfter),
				licensefile.KeyID(priv.Public().(ed25519.PublicKey)))
			return err
		},
	}
	c.Flags().StringVar(&keyPath, "key", "", "the vendor's private key (vendor keygen's vendor.key)")
	c.Flags().StringVar(&requestPath, "request", "", "the site's request (seatctl site request)")
	c.Flags().StringVar(&entPath, "entitlements", "", "the terms: YAML or JSON (see above)")
	c.Flags().StringVarP(&out, "output", "o", "", "file to write the license file to (default: stdout)")
	return c
}

// file is the license file e makes for the site of req at now.
func (e *entitlements) file(req *licensefile.SiteRequest, now time.Time) (*licensefile.File, error) {
	f := &licensefile.File{
		Serial: e.Serial, Customer: e.Customer, IssuedAt: now, NotAfter: e.NotAfter,
		SiteKey: req.SiteKey, Licenses: e.Licenses,
	}
	switch e.BindHost {
	case "":
	case licensefile.BindHostname, licensefile.BindMachineID:
		value := req.Hostname
		if e.BindHost == licensefile.BindMachineID {
			value = req.MachineID
		}
		if value == "" {
			return nil, fmt.Errorf("bind_host %s: the request carries no %s (the site makes one with seatctl site request --this-host)", e.BindHost, e.BindHost)
		}
		f.Host = &licensefile.HostBinding{Kind: e.BindHost, Value: value}
	default:
		return nil, fmt.Errorf("bind_host: must be %s or %s (got %q)", licensefile.BindHostname, licensefile.BindMachineID, e.BindHost)
	}
	for i := range f.Licenses {
		if f.Licenses[i].LeaseTTL == 0 {
			f.Licenses[i].LeaseTTL = licensefile.DefaultLeaseTTL
		}
	}
	return f, nil
}

// inspected is vendor inspect's -o json.
type inspected struct {
	Signature   string           `json:"signature"` // "verified" or "not checked"
	VendorKeyID string           `json:"vendor_kid"`
	Problem     string           `json:"problem,omitempty"`
	File        licensefile.File `json:"file"`
}

func vendorInspectCmd(g *globals) *cobra.Command {
	var pubPath string
	c := &cobra.Command{
		Use:   "inspect FILE [--pub vendor.pub]",
		Short: "Show a license file's terms, and with --pub whether the vendor's signature verifies",
		Long: `inspect prints a license file readably: its serial, customer, dates, site
key and host binding, its licenses and feature grants. With --pub (the
vendor's public key: PEM, JWK or JWKS) the signature is verified first and a
file that does not verify is refused (exit 6); without it the terms are
shown as the file states them, "signature: not checked". A file whose
readable text differs from what was signed is always refused.`,
		Example: "  seatctl vendor inspect site.lic --pub vendor.pub",
		Args:    exactArgs("FILE"),
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := readInput("license file", args[0])
			if err != nil {
				return err
			}
			var v inspected
			if pubPath != "" {
				keys, err := readPublicKeys("--pub", pubPath)
				if err != nil {
					return err
				}
				s, err := licensefile.Open(data, keys)
				if err != nil {
					return refusedf("%s: %w", args[0], err)
				}
				v = inspected{Signature: "verified", VendorKeyID: s.VendorKeyID, File: s.File}
			} else {
				in, err := licensefile.Inspect(data)
				if err != nil {
					return refusedf("%s: %w", args[0], err)
				}
				v = inspected{Signature: "not checked", VendorKeyID: in.VendorKeyID, File: in.File}
				if in.Problem != nil {
					v.Problem = in.Problem.Error()
				}
			}
			if done, err := g.emitJSON(v); done {
				return err
			}
			return printLicenseFile(g.stdout, v)
		},
	}
	c.Flags().StringVar(&pubPath, "pub", "", "the vendor's public key(s) to verify with (PEM, JWK or JWKS)")
	return c
}

func printLicenseFile(w io.Writer, v inspected) error {
	f := v.File
	sig := "verified: vendor key " + v.VendorKeyID
	if v.Signature != "verified" {
		sig = "NOT CHECKED (pass --pub vendor.pub); it claims vendor key " + v.VendorKeyID
	}
	host := "any (bound to the site key only)"
	if f.Host != nil {
		host = string(f.Host.Kind) + " " + f.Host.Value
	}
	t := newTable(w, "signature", sig)
	if v.Problem != "" {
		t.row("PROBLEM", v.Problem)
	}
	t.row("serial", strconv.FormatInt(f.Serial, 10))
	t.row("customer", f.Customer)
	t.row("issued", fmtUTC(f.IssuedAt))
	t.row("not after", fmtUTC(f.NotAfter))
	t.row("site key", f.SiteKey.Kid)
	t.row("host", host)
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	// SEATD ID: what the licenses and grants are called in a locked seatd.
	lt := newTable(w, "LICENSE", "NAME", "SEATS", "OVERDRAFT", "TTL", "STRATEGY", "BORROW", "EARLY RETURN", "EXPIRES", "SEATD ID")
	var grants int
	for _, l := range f.Licenses {
		strategy := string(l.LeasingStrategy)
		if strategy == "" {
			strategy = "fingerprint"
		}
		lt.row(l.ID, l.Name, strconv.Itoa(l.Seats), strconv.Itoa(l.Overdraft), shortDuration(l.LeaseTTL.Std()), strategy,
			fmtBorrow(l.MaxBorrowDuration, l.MaxBorrowedSeats), yesNo(l.AllowEarlyReturn), fmtUTC(l.ExpiresAt), licensefile.LicenseID(l.ID))
		grants += len(l.Grants)
	}
	if err := lt.flush(); err != nil || grants == 0 {
		return err
	}
	fmt.Fprintln(w)
	gt := newTable(w, "GRANT", "FEATURE", "VERSION", "SEATS", "OVERDRAFT", "STARTS", "EXPIRES", "BORROW", "SEATD ID")
	for _, l := range f.Licenses {
		for _, gr := range l.Grants {
			version := gr.Version
			if version == "" {
				version = "any"
			}
			gt.row(l.ID+"/"+gr.ID, gr.Feature, version, strconv.Itoa(gr.Seats), strconv.Itoa(gr.Overdraft),
				fmtUTC(gr.StartsAt), fmtUTC(gr.ExpiresAt), fmtBorrow(gr.MaxBorrowDuration, gr.MaxBorrowedSeats),
				licensefile.GrantID(licensefile.LicenseID(l.ID), gr))
		}
	}
	return gt.flush()
}

// fmtUTC is an instant of a license file as the file has it ("": none).
func fmtUTC(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtBorrow(d licensefile.Duration, seats int) string {
	switch {
	case d == 0:
		return "no"
	case seats > 0:
		return fmt.Sprintf("%s (%d seats)", shortDuration(d.Std()), seats)
	}
	return shortDuration(d.Std())
}

// usageChecked is one row of vendor verify-usage: the site's use, what the
// file licenses, and the difference.
type usageChecked struct {
	licensefile.UsageRow
	LicensedSeats int `json:"licensed_seats"` // seats (overdraft not counted) of the license, or of the feature's grants
	OverSeats     int `json:"over_seats"`     // peak_seats beyond licensed_seats: the overdraft used
}

type usageVerified struct {
	Verified    bool           `json:"verified"`
	SiteKeyID   string         `json:"site_key_id"`
	FileSerial  int64          `json:"file_serial"`
	Customer    string         `json:"customer"`
	PeriodStart time.Time      `json:"period_start"`
	PeriodEnd   time.Time      `json:"period_end"`
	CreatedAt   time.Time      `json:"created_at"`
	Rows        []usageChecked `json:"rows"`
}

func vendorVerifyUsageCmd(g *globals) *cobra.Command {
	var pubPath, filePath string
	c := &cobra.Command{
		Use:   "verify-usage --pub vendor.pub --file site.lic USAGE",
		Short: "Check a site's signed usage export against its license file, and show the overdraft used",
		Long: `verify-usage checks that a usage export was signed by the site key the
license file names (the file itself verified with the vendor's public key),
under that file's serial, and prints its rows: per license (and feature),
the peak seats held, the seats the file licenses, the seats over them (the
overdraft used, to bill), denials and seat-hours. An export that does not
verify is refused (exit 6). -o json prints the same as JSON.`,
		Example: "  seatctl vendor verify-usage --pub vendor.pub --file acme-site.lic acme-usage-2026-03.txt",
		Args:    exactArgs("USAGE"),
		RunE: func(_ *cobra.Command, args []string) error {
			keys, err := readPublicKeys("--pub", pubPath)
			if err != nil {
				return err
			}
			fileData, err := readInput("--file", filePath)
			if err != nil {
				return err
			}
			file, err := licensefile.Open(fileData, keys)
			if err != nil {
				return refusedf("--file %s: %w", filePath, err)
			}
			data, err := readInput("usage export", args[0])
			if err != nil {
				return err
			}
			u, err := licensefile.VerifyUsage(data, &file.File)
			if err != nil {
				return refusedf("%s: %w", args[0], err)
			}
			v := usageVerified{Verified: true, SiteKeyID: u.SiteKeyID, FileSerial: u.FileSerial, Customer: file.Customer,
				PeriodStart: u.PeriodStart, PeriodEnd: u.PeriodEnd, CreatedAt: u.CreatedAt, Rows: []usageChecked{}}
			for _, r := range u.Rows {
				licensed := licensedSeats(&file.File, r.LicenseID, r.Feature)
				v.Rows = append(v.Rows, usageChecked{UsageRow: r, LicensedSeats: licensed, OverSeats: max(0, r.PeakSeats-licensed)})
			}
			if done, err := g.emitJSON(v); done {
				return err
			}
			t := newTable(g.stdout, "usage export", "verified: signed by site key "+u.SiteKeyID+", license file serial "+strconv.FormatInt(u.FileSerial, 10)+" of "+file.Customer)
			t.row("period", fmtUTC(u.PeriodStart)+" to "+fmtUTC(u.PeriodEnd))
			t.row("made", fmtUTC(u.CreatedAt))
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
			rt := newTable(g.stdout, "LICENSE", "FEATURE", "PEAK", "LICENSED", "OVER", "DENIALS", "SEAT-HOURS")
			for _, r := range v.Rows {
				rt.row(r.LicenseID, r.Feature, strconv.Itoa(r.PeakSeats), strconv.Itoa(r.LicensedSeats), strconv.Itoa(r.OverSeats),
					strconv.FormatInt(r.Denials, 10), strconv.FormatFloat(r.SeatHours, 'f', 2, 64))
			}
			return rt.flush()
		},
	}
	c.Flags().StringVar(&pubPath, "pub", "", "the vendor's public key(s) (PEM, JWK or JWKS)")
	c.Flags().StringVar(&filePath, "file", "", "the license file the export was made under")
	return c
}

// licensedSeats is what the file sells of a license's base pool
// (feature "") or of a feature: the seats of its grants, summed.
func licensedSeats(f *licensefile.File, licenseID, feature string) int {
	for _, l := range f.Licenses {
		if l.ID != licenseID {
			continue
		}
		if feature == "" {
			return l.Seats
		}
		n := 0
		for _, gr := range l.Grants {
			if gr.Feature == feature {
				n += gr.Seats
			}
		}
		return n
	}
	return 0
}
