package daemon

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/locked"
	"github.com/seatd/seatd/server/signing"
)

// machineIDPath is the host's machine-id, for a license file bound to it
// (a variable for tests).
var machineIDPath = locked.MachineIDPath

// startLocked puts --license-file in force (locked mode): the site key
// (made and kept in the store if missing, sealed like the lease-signing
// keys), the vendor's keys, then the file, verified and synced. Any
// error stops the start, naming why. It returns the controller and the
// signer of the certificates of the file's licenses (the site key).
func startLocked(ctx context.Context, cfg Config, store server.Store, sealer *signing.Sealer, log *slog.Logger) (*locked.Controller, *signing.Site, error) {
	keys, err := vendorKeys(cfg)
	if err != nil {
		return nil, nil, err
	}
	site, err := siteKey(ctx, store, sealer, log)
	if err != nil {
		return nil, nil, err
	}
	hostname, machineID := locked.ThisHost(machineIDPath)
	c := locked.New(locked.Config{
		Path: cfg.LicenseFile, VendorKeys: keys, Store: store, Logger: log,
		Site:    licensefile.Site{Key: site.Public(), Hostname: hostname, MachineID: machineID},
		SiteKey: site,
	})
	if err := c.Start(ctx); err != nil {
		return nil, nil, err
	}
	signer, err := signing.NewSite(site.Private, c)
	if err != nil {
		return nil, nil, err
	}
	return c, signer, nil
}

// siteKey is the store's site key, made if missing, with a warning when
// it is kept plain.
func siteKey(ctx context.Context, store server.Store, sealer *signing.Sealer, log *slog.Logger) (locked.SiteKey, error) {
	k, err := locked.EnsureSiteKey(ctx, store, sealer, time.Now())
	if err != nil {
		return locked.SiteKey{}, err
	}
	if !k.Sealed {
		log.Warn("the site key is stored plain: anyone with the data file, a backup of it, or (distributed) the site_key table can serve this site's license file elsewhere; set SEATD_SIGNING_KEY_ENCRYPTION_KEY or --signing-key-encryption-key-file before the site key is made to seal it", "site_key", k.ID)
	}
	return k, nil
}

// watchLicenseFile runs the controller's Watch every interval until
// stop, telling readiness what it finds. One look may take up to
// timeout, whatever the interval: a look that syncs a file's licenses
// makes several store calls, and a bound as short as a short interval
// would fail every look on a loaded machine, the instance never ready
// (the ticker drops the ticks a long look spans).
func watchLicenseFile(c *locked.Controller, every, timeout time.Duration, r *readiness, log *slog.Logger, stop <-chan struct{}) {
	// A look under way ends at stop: the shutdown waits for this loop.
	stopped, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	go func() {
		select {
		case <-stop:
			cancelAll()
		case <-stopped.Done():
		}
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(stopped, timeout)
		why, err := c.Watch(ctx)
		cancel()
		if stopped.Err() != nil {
			return
		}
		if err != nil {
			// The store failed: its own readiness check says so; the
			// file in force stays and the next look tries again.
			log.Warn("license file: the watch could not ask the store; it tries again", "err", err)
			continue
		}
		r.setLicenseFile(why)
	}
}

// hangups catches SIGHUP for reloadOnHangup from before the start, so
// that one sent as soon as seatd serves reloads rather than ends it (the
// default action); nil stop: none caught.
func hangups(cfg Config) (hup chan os.Signal, stop func()) {
	if cfg.LicenseFile == "" {
		return nil, func() {}
	}
	hup = make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// reloadOnHangup reloads the license file on each SIGHUP until ctx ends:
// the controller logs the outcome (a refused file in one line, the file
// in force staying).
func reloadOnHangup(ctx context.Context, c *locked.Controller, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_, _, _ = c.Reload(context.WithoutCancel(ctx))
		}
	}
}

// siteIDMain is `seatd site-id`: it prints the site request for this
// seatd's site key (made and kept in the store if it has none, sealed
// with the signing-key encryption key when one is given), which the site
// sends its vendor for a license file. It opens the store as seatd would
// (the same flags): an embedded data dir must not be in use.
func siteIDMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg Config
	fs := cfg.flagSet() // seatd's own flags, to open the store as it does
	fs.Init("seatd site-id", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &command{name: "site-id", flags: fs, stdout: stdout, stderr: stderr}
	name := fs.String("name", "", "the site's name, as the vendor will see it (default: this host's name)")
	thisHost := fs.Bool("this-host", false, "add this host's hostname and machine-id ("+machineIDPath+"), for a vendor that binds the file to the host")
	importKey := fs.String("import-key", "", "make this PEM private key (seatctl site keygen's site.key) the site key, for a file signed for it already; refused if the store has another site key")
	out := fs.String("o", "", "write the request to this file (default: stdout)")
	positional, code, ok := c.parse(args, "Usage: seatd site-id [--name NAME] [--this-host] [--import-key site.key] [-o request.txt] [seatd's store flags]\n\n  Prints the site request to send the vendor: this seatd's site key (made and\n  kept in the store if it has none), signed by itself. Give it the store flags\n  seatd runs with (--data-dir, or --postgres-url and --redis-url; the encryption\n  key that seals the site key); an embedded seatd must be stopped first.")
	if !ok {
		return code
	}
	if len(positional) > 0 {
		return c.fail(2, "unexpected argument %q (see seatd site-id -h)", positional[0])
	}
	if err := applyEnv(fs, os.Getenv); err != nil {
		return c.fail(2, "%v", err)
	}
	sealer, err := signingSealer(cfg)
	if err != nil {
		return c.fail(2, "%v", err)
	}
	log := slog.New(slog.DiscardHandler)
	store, rdb, err := openStore(ctx, cfg, log)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	defer func() {
		_ = store.Close()
		if rdb != nil {
			_ = rdb.Close()
		}
	}()
	var k locked.SiteKey
	if *importKey != "" {
		data, err := os.ReadFile(*importKey)
		if err != nil {
			return c.fail(1, "--import-key: %v", err)
		}
		priv, err := licensefile.ParsePrivateKey(data)
		if err != nil {
			return c.fail(1, "--import-key %s: %v", *importKey, err)
		}
		k, err = locked.ImportSiteKey(ctx, store, priv, sealer, time.Now())
		clear(priv)
		if err != nil {
			return c.fail(1, "%v", err)
		}
	} else if k, err = locked.EnsureSiteKey(ctx, store, sealer, time.Now()); err != nil {
		return c.fail(1, "%v", err)
	}
	hostname, machineID := "", ""
	if *thisHost {
		hostname, machineID = locked.ThisHost(machineIDPath)
		if machineID == "" {
			return c.fail(1, "--this-host: %s cannot be read", machineIDPath)
		}
	}
	siteName := *name
	if siteName == "" {
		if siteName, err = os.Hostname(); err != nil || siteName == "" {
			return c.fail(2, "--name: the site's name is required (this host's name cannot be read)")
		}
	}
	req, err := locked.Request(k, siteName, hostname, machineID, time.Now())
	if err != nil {
		return c.fail(1, "%v", err)
	}
	sealed := "sealed"
	if !k.Sealed {
		sealed = "plain (no signing-key encryption key was given when it was made)"
	}
	if *out != "" {
		if err := os.WriteFile(*out, req, 0o644); err != nil {
			return c.fail(1, "-o: %v", err)
		}
	} else if _, err := stdout.Write(req); err != nil {
		return c.fail(1, "%v", err)
	}
	fmt.Fprintf(stderr, "seatd site-id: site key %s, kept %s; send the request to your vendor for a license file\n", k.ID, sealed)
	return 0
}
