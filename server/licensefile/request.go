package licensefile

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// SiteRequest is what a site sends its vendor to get a license file: its
// public key, signed with that key's private half, so the vendor knows
// the sender holds it (a file for a key nobody holds is useless; one for
// a key copied from another site's request would let that site serve it:
// the signature rules out a request typed up from someone else's key).
type SiteRequest struct {
	Name      string    `json:"name"` // the site, as its admin calls it
	SiteKey   JWK       `json:"site_key"`
	CreatedAt time.Time `json:"created_at"`
	// Hostname and MachineID are the site host's, for a vendor that binds
	// the file to it (HostBinding); "" when not given.
	Hostname  string `json:"hostname,omitempty"`
	MachineID string `json:"machine_id,omitempty"`
}

// MakeRequest returns r signed with the site key, its SiteKey set from
// that key and CreatedAt to the second in UTC.
func MakeRequest(r SiteRequest, siteKey ed25519.PrivateKey) ([]byte, error) {
	if len(siteKey) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("site request: %w", ErrKeyType)
	}
	r.SiteKey = NewJWK(siteKey.Public().(ed25519.PublicKey))
	r.CreatedAt = second(r.CreatedAt)
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return seal(kindSiteRequest, r, siteKey)
}

// VerifyRequest checks that a site request is signed by the key it
// carries, and valid.
func VerifyRequest(data []byte) (*SiteRequest, error) {
	e, err := unarmour(data, kindSiteRequest)
	if err != nil {
		return nil, err
	}
	// The key to verify with is in the payload: read it, then verify
	// that the payload was signed with it. Nothing else is read first.
	var claimed SiteRequest
	if err := decodeStrict(e.jws.UnsafePayloadWithoutVerification(), &claimed); err != nil {
		return nil, fmt.Errorf("site request: %w", err)
	}
	pub, err := claimed.SiteKey.PublicKey("site_key")
	if err != nil {
		return nil, fmt.Errorf("site request: %w", err)
	}
	if e.header.Kid != claimed.SiteKey.Kid {
		return nil, fmt.Errorf("site request: %w: signed by key %s, not by the site key it carries (%s)", ErrBadSignature, e.header.Kid, claimed.SiteKey.Kid)
	}
	if err := e.verify([]ed25519.PublicKey{pub}); err != nil {
		return nil, err
	}
	if err := e.checkReadable(); err != nil {
		return nil, err
	}
	var r SiteRequest
	if err := e.decode(&r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("site request: %w", err)
	}
	return &r, nil
}

// Validate refuses a request with a bad field, naming it.
func (r *SiteRequest) Validate() error {
	if err := checkText("name", r.Name, true); err != nil {
		return err
	}
	if _, err := r.SiteKey.PublicKey("site_key"); err != nil {
		return err
	}
	if r.CreatedAt.IsZero() {
		return invalid("created_at", "is required")
	}
	if r.Hostname != "" {
		if err := (&HostBinding{Kind: BindHostname, Value: r.Hostname}).validate(); err != nil {
			return invalid("hostname", "must be a hostname: 1-%d letters, digits, '-' and '.'", maxHostname)
		}
	}
	if r.MachineID != "" {
		if err := (&HostBinding{Kind: BindMachineID, Value: r.MachineID}).validate(); err != nil {
			return invalid("machine_id", "must be a machine-id: %d lowercase hex digits, as in /etc/machine-id", maxMachineID)
		}
	}
	return nil
}

// PublicKey is the site key the request carries (it has been verified).
func (r *SiteRequest) PublicKey() ed25519.PublicKey {
	pub, _ := r.SiteKey.PublicKey("site_key")
	return pub
}
