package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Sign validates f and returns it as a license file signed with the
// vendor's key. Times are kept to the second, in UTC: the file says what
// it will be read as.
func Sign(f *File, vendorKey ed25519.PrivateKey) ([]byte, error) {
	c := f.normalized()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return seal(kindLicenseFile, c, vendorKey)
}

// normalized is a copy of f with every time in UTC to the second.
func (f *File) normalized() *File {
	c := *f
	c.IssuedAt, c.NotAfter = second(c.IssuedAt), second(c.NotAfter)
	if f.Host != nil {
		h := *f.Host
		c.Host = &h
	}
	c.Licenses = make([]License, len(f.Licenses))
	for i, l := range f.Licenses {
		l.ExpiresAt = second(l.ExpiresAt)
		l.Grants = append([]Grant(nil), l.Grants...)
		for j := range l.Grants {
			l.Grants[j].StartsAt, l.Grants[j].ExpiresAt = second(l.Grants[j].StartsAt), second(l.Grants[j].ExpiresAt)
		}
		c.Licenses[i] = l
	}
	return &c
}

func second(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second)
}

// Signed is a verified license file: its payload and what signed it.
type Signed struct {
	File
	// VendorKeyID is the kid of the vendor key that signed it.
	VendorKeyID string
	// Token is the file's JWS (compact serialization): what a product
	// verifies with the vendor's key to trust the site key (OpenToken).
	Token string
}

// Open verifies a license file's signature with the vendor's keys (the
// one its kid names), that its readable copy is what was signed, and its
// content, and returns it. It does not judge whether this site may serve
// it now: Verify does. The vendor's tools use it alone.
func Open(data []byte, vendorKeys []ed25519.PublicKey) (*Signed, error) {
	e, err := unarmour(data, kindLicenseFile)
	if err != nil {
		return nil, err
	}
	return openEnvelope(e, vendorKeys)
}

// OpenToken is Open for a bare JWS (Signed.Token), as a product that has
// the token but not the file checks it.
func OpenToken(token string, vendorKeys []ed25519.PublicKey) (*Signed, error) {
	e, err := parseToken(strings.TrimSpace(token), kindLicenseFile)
	if err != nil {
		return nil, err
	}
	return openEnvelope(e, vendorKeys)
}

func openEnvelope(e *envelope, vendorKeys []ed25519.PublicKey) (*Signed, error) {
	if len(vendorKeys) == 0 {
		return nil, fmt.Errorf("license file: %w: no vendor key to verify with", ErrUnknownKey)
	}
	if err := e.verify(vendorKeys); err != nil {
		return nil, err
	}
	if err := e.checkReadable(); err != nil {
		return nil, err
	}
	s := &Signed{VendorKeyID: e.header.Kid, Token: e.token}
	if err := e.decode(&s.File); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("license file serial %d: %w", s.Serial, err)
	}
	return s, nil
}

// Site is the seatd that is to serve a file.
type Site struct {
	// Key is the site key's public half.
	Key ed25519.PublicKey
	// Hostname and MachineID are this host's, for a file bound to one
	// ("": unknown, and a file bound by it is refused).
	Hostname, MachineID string
}

// Verify is Open, then CheckSite: a file this site may serve at now.
func Verify(data []byte, vendorKeys []ed25519.PublicKey, site Site, now time.Time) (*Signed, error) {
	s, err := Open(data, vendorKeys)
	if err != nil {
		return nil, err
	}
	if err := s.CheckSite(site, now); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckSite refuses a file made for another site key (ErrWrongSite) or
// host (ErrWrongHost), or past its not_after at now (ErrExpired).
func (f *File) CheckSite(site Site, now time.Time) error {
	pub, err := f.SiteKey.PublicKey("site_key")
	if err != nil {
		return err
	}
	if len(site.Key) != ed25519.PublicKeySize {
		return fmt.Errorf("license file serial %d: this site's key: %w", f.Serial, ErrKeyType)
	}
	if !pub.Equal(site.Key) {
		return fmt.Errorf("license file serial %d: %w: it names site key %s, this seatd's is %s", f.Serial, ErrWrongSite, f.SiteKey.Kid, KeyID(site.Key))
	}
	if h := f.Host; h != nil {
		var ok bool
		var have string
		switch h.Kind {
		case BindHostname:
			have, ok = site.Hostname, strings.EqualFold(h.Value, site.Hostname)
		case BindMachineID:
			have, ok = site.MachineID, h.Value == strings.ToLower(strings.TrimSpace(site.MachineID))
		}
		if !ok {
			if have == "" {
				have = "unknown"
			}
			return fmt.Errorf("license file serial %d: %w: it is bound to %s %q, this host's is %s", f.Serial, ErrWrongHost, h.Kind, h.Value, have)
		}
	}
	if !now.Before(f.NotAfter) {
		return fmt.Errorf("license file serial %d: %w (%s)", f.Serial, ErrExpired, f.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// Replaces judges next as the replacement of the file in force, cur
// (both verified for this site): it must have a higher serial
// (ErrNotNewer), so that an older file, with more seats perhaps, cannot be
// put back. The file in force given again is ErrSameFile, for the caller
// to ignore (a reload that found nothing new).
func Replaces(cur, next *File) error {
	switch {
	case next.Serial > cur.Serial:
		return nil
	case next.Serial == cur.Serial && samePayload(cur, next):
		return fmt.Errorf("license file serial %d: %w", next.Serial, ErrSameFile)
	}
	return fmt.Errorf("license file serial %d: %w (serial %d)", next.Serial, ErrNotNewer, cur.Serial)
}

func samePayload(a, b *File) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Inspection is what Inspect reads from a file it does not verify.
type Inspection struct {
	File        File
	VendorKeyID string // the kid the signature claims
	// Problem is why the payload is not a valid file ("" when it is):
	// Inspect still shows what it could read.
	Problem error
}

// Inspect reads a license file without verifying its signature: for a
// person to look at, never to trust. It refuses only what it cannot read
// at all; a readable copy that differs from the payload is ErrTampered,
// since showing either would mislead. The payload shown is the signed one.
func Inspect(data []byte) (*Inspection, error) {
	e, err := unarmour(data, kindLicenseFile)
	if err != nil {
		return nil, err
	}
	e.payload = e.jws.UnsafePayloadWithoutVerification()
	if err := e.checkReadable(); err != nil {
		return nil, err
	}
	in := &Inspection{VendorKeyID: e.header.Kid}
	if err := e.decode(&in.File); err != nil {
		return nil, err
	}
	in.Problem = in.File.Validate()
	return in, nil
}
