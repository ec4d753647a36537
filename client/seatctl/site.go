package seatctl

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/seatd/seatd/server/licensefile"
)

// machineIDPath is where systemd keeps the host's machine-id (a test's
// is its own file).
var machineIDPath = "/etc/machine-id"

func siteCmd(g *globals) *cobra.Command {
	return group("site", "An air-gapped site's side: its key, and the request it sends its vendor for a license file (no seatd needed)", nil,
		siteKeygenCmd(g), siteRequestCmd(g))
}

func siteKeygenCmd(g *globals) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "keygen -o DIR",
		Short: "Make a site key pair: DIR/site.key (private, 0600) and DIR/site.pub",
		Long: `keygen makes a site key: DIR/site.key (PEM PKCS #8, mode 0600) and
DIR/site.pub. A license file names the site key it was made for, and only
the seatd holding it may serve the file: keep site.key with that seatd, and
back it up (a lost site key needs a new file from the vendor). It never
replaces an existing key.`,
		Example: "  seatctl site keygen -o /etc/seatd/site",
		Args:    exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			kid, keyPath, pubPath, err := writeKeyPair(dir, "site")
			if err != nil {
				return err
			}
			t := newTable(g.stdout, "KID", "PRIVATE KEY (keep with seatd)", "PUBLIC KEY")
			t.row(kid, keyPath, pubPath)
			return t.flush()
		},
	}
	c.Flags().StringVarP(&dir, "output", "o", "", "directory to write site.key and site.pub into (made if missing)")
	return c
}

func siteRequestCmd(g *globals) *cobra.Command {
	var keyPath, name, hostname, machineID, out string
	var thisHost bool
	c := &cobra.Command{
		Use:   "request --key site.key --name NAME [--this-host] [-o request.txt]",
		Short: "Write the request to send the vendor for a license file: the site key, signed by itself",
		Long: `request writes (stdout without -o) a site request: the site's name and public
key, signed with the site key so that the vendor knows the sender holds it.
Send it to the vendor, who answers with a license file for this key
(seatctl vendor sign). With --this-host it also carries this host's
hostname and machine-id (` + machineIDPath + `), for a vendor that binds the file to
the host: run it on the host seatd runs on. It holds no secret.`,
		Example: "  seatctl site request --key /etc/seatd/site/site.key --name \"Plant 4\" --this-host -o request.txt",
		Args:    exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			if name == "" {
				return usageErrorf("--name: the site's name is required")
			}
			priv, err := readPrivateKey("--key", keyPath)
			if err != nil {
				return err
			}
			if thisHost {
				if hostname == "" {
					if hostname, err = os.Hostname(); err != nil {
						return usageErrorf("--this-host: %v", err)
					}
				}
				if machineID == "" {
					if machineID, err = trimmedFile(machineIDPath); err != nil {
						return usageErrorf("--this-host: %v (pass --machine-id)", unwrapPath(err))
					}
				}
			}
			data, err := licensefile.MakeRequest(licensefile.SiteRequest{
				Name: name, CreatedAt: g.clock(), Hostname: hostname, MachineID: machineID,
			}, priv)
			if err != nil {
				return usageErrorf("%v", err)
			}
			return g.writeOutput(out, data)
		},
	}
	c.Flags().StringVar(&keyPath, "key", "", "the site's private key (site keygen's site.key)")
	c.Flags().StringVar(&name, "name", "", "the site's name, as the vendor will see it")
	c.Flags().BoolVar(&thisHost, "this-host", false, "add this host's hostname and machine-id ("+machineIDPath+")")
	c.Flags().StringVar(&hostname, "hostname", "", "the hostname to put in the request (instead of this host's)")
	c.Flags().StringVar(&machineID, "machine-id", "", "the machine-id to put in the request (instead of this host's)")
	c.Flags().StringVarP(&out, "output", "o", "", "file to write the request to (default: stdout)")
	return c
}
