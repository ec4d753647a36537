package locked

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// Config wires a Controller.
type Config struct {
	// Path is the license file (--license-file).
	Path string
	// VendorKeys verify it: the vendor's public keys.
	VendorKeys []ed25519.PublicKey
	// Site is this seatd: its site key's public half and its host.
	Site licensefile.Site
	// SiteKey is the site key itself, which signs the usage exports
	// (UsageExport); without it there are none.
	SiteKey SiteKey
	Store   server.Store
	// Logger, default: none.
	Logger *slog.Logger
	// Now is the clock the file's not_after is judged by (default
	// time.Now).
	Now func() time.Time
}

// Info is the license file in force, as GetLicenseFile shows it.
type Info struct {
	Path        string
	Serial      int64
	Customer    string
	IssuedAt    time.Time
	NotAfter    time.Time
	SiteKeyID   string
	VendorKeyID string
	Licenses    int
	// SHA256 is the hex SHA-256 of its signed token (what the store's
	// record names: server.LicenseFileRecord.Hash).
	SHA256 string
	// Token is the file's JWS (compact serialization), which a product
	// verifies with the vendor's key (SeatService.GetSignedLicenseFile).
	Token string
	// InForceSince is when the store first had it in force (by any
	// instance).
	InForceSince time.Time
}

// Controller keeps this instance's license file in force.
type Controller struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex // one load at a time
	cur  *inForce   // the file in force here, its sync done; nil before Start
	seen []byte     // the last bytes read from Path by Watch

	// licenses is what certificates name of the file in force (cur),
	// read without mu: a certificate is never held up by a reload.
	licenses atomic.Pointer[fileLicenses]
}

// fileLicenses are the file in force's serial and its licenses' ids,
// by their seatd ids (licensefile.LicenseID).
type fileLicenses struct {
	serial int64
	ids    map[string]string
}

type inForce struct {
	file   *licensefile.Signed
	hash   string
	record server.LicenseFileRecord
}

// New returns a Controller; Start puts its file in force.
func New(cfg Config) *Controller {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Controller{cfg: cfg, log: log, now: now}
}

// Start reads and verifies the license file and puts it in force: the
// store records it (an older serial than the store's is refused: a
// restart or another instance cannot put back an older file) and its
// licenses are synced. Any error stops the start; its message names the
// file and why.
func (c *Controller) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := os.ReadFile(c.cfg.Path)
	if err != nil {
		return fmt.Errorf("--license-file: %w", err)
	}
	c.seen = data
	next, err := licensefile.Verify(data, c.cfg.VendorKeys, c.cfg.Site, c.now())
	if err != nil {
		return fmt.Errorf("--license-file %s refused: %w", c.cfg.Path, err)
	}
	cur, changes, err := c.putInForce(ctx, next)
	var se *server.Error
	if server.ErrorReason(err) == server.ReasonLicenseFileRefused && errors.As(err, &se) {
		return fmt.Errorf("--license-file %s refused: %s: put the newer file back (the vendor's files for a site only move forward)", c.cfg.Path, se.Message)
	}
	if err != nil {
		return fmt.Errorf("--license-file %s: %w", c.cfg.Path, err)
	}
	c.setInForce(cur)
	c.logInForce("license file in force", cur, changes)
	return nil
}

// setInForce makes f the file in force here. Called with c.mu held.
func (c *Controller) setInForce(f *inForce) {
	c.cur = f
	ids := make(map[string]string, len(f.file.Licenses))
	for _, l := range f.file.Licenses {
		ids[licensefile.LicenseID(l.ID)] = l.ID
	}
	c.licenses.Store(&fileLicenses{serial: f.file.Serial, ids: ids})
}

// FileLicense is signing.SiteFiles: the serial of the file in force and
// the file's id of the license licenseID, which the file holds when it
// is a license of the tenant Sync writes to with that id.
func (c *Controller) FileLicense(tenantID, licenseID string) (serial int64, fileLicenseID string, ok bool) {
	fl := c.licenses.Load()
	if fl == nil || tenantID != tenant || !strings.HasPrefix(licenseID, server.PrefixLicenseID) {
		return 0, "", false
	}
	id, ok := fl.ids[licenseID]
	return fl.serial, id, ok
}

// putInForce records next as the file in force and syncs its licenses.
func (c *Controller) putInForce(ctx context.Context, next *licensefile.Signed) (*inForce, Changes, error) {
	f := &inForce{file: next, hash: tokenHash(next.Token)}
	rec, err := c.cfg.Store.SetFileInForce(ctx, server.LicenseFileRecord{Serial: next.Serial, Hash: f.hash})
	if err != nil {
		return nil, Changes{}, err
	}
	f.record = rec
	changes, err := Sync(ctx, c.cfg.Store, &next.File, c.now())
	if err != nil {
		return nil, changes, fmt.Errorf("sync its licenses: %w", err)
	}
	return f, changes, nil
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (c *Controller) logInForce(msg string, f *inForce, changes Changes) {
	c.log.Info(msg, "path", c.cfg.Path, "serial", f.file.Serial, "customer", f.file.Customer,
		"not_after", f.file.NotAfter.UTC().Format(time.RFC3339), "site_key", f.file.SiteKey.Kid, "licenses", len(f.file.Licenses),
		"licenses_created", changes.LicensesCreated, "licenses_updated", changes.LicensesUpdated,
		"licenses_deactivated", changes.LicensesDeactivated, "grants_created", changes.GrantsCreated,
		"grants_updated", changes.GrantsUpdated, "grants_deleted", changes.GrantsDeleted)
}

// InForce is the file in force here (zero before Start).
func (c *Controller) InForce() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info(c.cur)
}

func (c *Controller) info(f *inForce) Info {
	if f == nil {
		return Info{}
	}
	return Info{
		Path: c.cfg.Path, Serial: f.file.Serial, Customer: f.file.Customer,
		IssuedAt: f.file.IssuedAt, NotAfter: f.file.NotAfter, SiteKeyID: f.file.SiteKey.Kid,
		VendorKeyID: f.file.VendorKeyID, Licenses: len(f.file.Licenses), SHA256: f.hash, InForceSince: f.record.SetAt,
		Token: f.file.Token,
	}
}

// Reload reads the license file again (SIGHUP, the admin call): a newer
// file this site may serve is put in force at once (changed true); the
// file in force again changes nothing (changed false). A file refused
// (unreadable, tampered, badly signed, for another site or host, past
// its not_after, not newer than the one in force here or in the store)
// is logged in one line and returned as a *server.Error with reason
// LICENSE_FILE_REFUSED whose metadata cause names why; the file in force
// stays. Other errors (the store) are returned as they are, the file in
// force staying too.
func (c *Controller) Reload(ctx context.Context) (_ Info, changed bool, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := os.ReadFile(c.cfg.Path)
	if err != nil {
		c.log.Error("license file refused: it cannot be read; the file in force stays", "path", c.cfg.Path, "serial_in_force", c.serial(), "err", err)
		return c.info(c.cur), false, refused("unreadable", "the license file cannot be read (seatd's log says why)", 0, c.serial())
	}
	c.seen = data
	return c.load(ctx, data)
}

// load judges data as the next file and puts it in force. Called with
// c.mu held.
func (c *Controller) load(ctx context.Context, data []byte) (Info, bool, error) {
	next, err := licensefile.Verify(data, c.cfg.VendorKeys, c.cfg.Site, c.now())
	if err == nil && c.cur != nil {
		err = licensefile.Replaces(&c.cur.file.File, &next.File)
	}
	if errors.Is(err, licensefile.ErrSameFile) {
		return c.info(c.cur), false, nil
	}
	if err != nil {
		return c.refuse(err, next)
	}
	f, changes, err := c.putInForce(ctx, next)
	var se *server.Error
	if server.ErrorReason(err) == server.ReasonLicenseFileRefused && errors.As(err, &se) {
		// The store's record is newer than the file in force here: another
		// instance (or an earlier run) put a newer file in force.
		return c.refuse(fmt.Errorf("%w: %s", licensefile.ErrNotNewer, se.Message), next)
	}
	if err != nil {
		c.log.Error("license file not put in force: the store failed; the file in force stays (reload again)", "path", c.cfg.Path, "serial", next.Serial, "err", err)
		return c.info(c.cur), false, err
	}
	c.setInForce(f)
	c.logInForce("license file reloaded: in force", f, changes)
	return c.info(f), true, nil
}

func (c *Controller) serial() int64 {
	if c.cur == nil {
		return 0
	}
	return c.cur.file.Serial
}

// refuse logs why a file was refused and returns it as a client error.
func (c *Controller) refuse(err error, next *licensefile.Signed) (Info, bool, error) {
	var serial int64
	if next != nil {
		serial = next.Serial
	}
	cause := causeOf(err)
	c.log.Error("license file refused; the file in force stays", "path", c.cfg.Path, "cause", cause, "serial_in_force", c.serial(), "err", err)
	return c.info(c.cur), false, refused(cause, err.Error(), serial, c.serial())
}

func refused(cause, msg string, serial, inForce int64) *server.Error {
	md := map[string]string{"cause": cause, "serial_in_force": strconv.FormatInt(inForce, 10)}
	if serial > 0 {
		md["serial"] = strconv.FormatInt(serial, 10)
	}
	return &server.Error{Code: server.EPRECONDITION, Reason: server.ReasonLicenseFileRefused, Message: msg, Metadata: md}
}

// causes name licensefile's refusals in the ErrorInfo metadata "cause".
var causes = []struct {
	err  error
	name string
}{
	{licensefile.ErrMalformed, "malformed"},
	{licensefile.ErrWrongDocument, "wrong_document"},
	{licensefile.ErrUnknownField, "unknown_field"},
	{licensefile.ErrKeyType, "key_type"},
	{licensefile.ErrUnknownKey, "unknown_key"},
	{licensefile.ErrBadSignature, "bad_signature"},
	{licensefile.ErrTampered, "tampered"},
	{licensefile.ErrInvalid, "invalid"},
	{licensefile.ErrWrongSite, "wrong_site"},
	{licensefile.ErrWrongHost, "wrong_host"},
	{licensefile.ErrExpired, "expired"},
	{licensefile.ErrNotNewer, "not_newer"},
}

func causeOf(err error) string {
	for _, c := range causes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "invalid"
}

// Watch is one look, every --license-file-watch-interval: a license file
// whose bytes changed since last read is loaded as Reload loads it (a
// refused one is logged once per content); then the file in force here is
// compared with the store's record. why is "" when they agree (the sync
// is then run again, writing only what differs: it repairs what an
// instance that raced this one with an older file wrote), else why this
// instance should not take calls: another instance put another file in
// force, which this one does not have.
func (c *Controller) Watch(ctx context.Context) (why string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return "the license file is not in force yet", nil
	}
	if data, rerr := os.ReadFile(c.cfg.Path); rerr == nil && !bytes.Equal(data, c.seen) {
		prev := c.seen
		c.seen = data
		if _, _, err := c.load(ctx, data); err != nil && server.ErrorReason(err) != server.ReasonLicenseFileRefused {
			c.seen = prev // the store failed, not the file: the next look loads it again
			return "", err
		}
	}
	rec, err := c.cfg.Store.FileInForce(ctx)
	if err != nil {
		return "", err
	}
	if rec.Serial != c.cur.file.Serial || rec.Hash != c.cur.hash {
		return fmt.Sprintf("the license file in force is serial %d, this instance has serial %d: give every instance the same file (--license-file) and reload", rec.Serial, c.cur.file.Serial), nil
	}
	c.cur.record = rec
	if changes, err := Sync(ctx, c.cfg.Store, &c.cur.file.File, c.now()); err != nil {
		return "", err
	} else if !changes.None() {
		c.logInForce("license file: licenses that differed from the file in force were synced again", c.cur, changes)
	}
	return "", nil
}
