package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// returnedType is the typ header of a signed list of returned certificates.
const returnedType = "seatd-returned+jwt"

// ReturnedList is a tenant's signed list of returned certificates: the
// borrowed leases returned before their deadline (a license that allows
// early return). A certificate it names must not be used, although it
// verifies and has not expired. Verify one with SigningKeys.VerifyReturned;
// a product that comes online fetches it (Client.FetchReturnedCertificates,
// or GET /v1/tenants/{tenant_id}/returned.jwt), keeps the newest it has
// verified (Newer) and checks every stored certificate against it
// (VerifyOfflineReturned).
type ReturnedList struct {
	TenantID string
	IssuedAt time.Time // when seatd signed it: a newer list names every return an older one does
	KeyID    string    // the kid of the key that signed it
	Token    string    // the list as received, to store
	returned map[string]time.Time
}

// Returned reports whether the list names the certificate of lease id.
func (l *ReturnedList) Returned(leaseID string) bool {
	if l == nil {
		return false
	}
	_, ok := l.returned[leaseID]
	return ok
}

// Len is how many certificates the list names.
func (l *ReturnedList) Len() int { return len(l.returned) }

// Newer returns whichever of a (the list kept so far, nil if none) and b
// (a list just fetched) was signed later: a product never replaces its
// list by an older one, which an attacker could replay to unlist a
// returned certificate. Both must have been verified.
func Newer(a, b *ReturnedList) *ReturnedList {
	if a == nil || (b != nil && !b.IssuedAt.Before(a.IssuedAt)) {
		return b
	}
	return a
}

// VerifyReturned checks a signed list of returned certificates: a JWS
// compact token, alg EdDSA, typ seatd-returned+jwt (never a lease
// certificate), signed by the key of the set named by its kid, iss seatd,
// for tenantID, with an iat. maxAge > 0 also refuses a list signed more
// than maxAge before now (or more than a minute after it): what a product
// that has just fetched the list asks, so that an old list replayed by a
// man in the middle is not taken for the current one. Offline, check the
// list kept with maxAge 0. Every error satisfies
// errors.Is(err, ErrBadCertificate).
func (k *SigningKeys) VerifyReturned(list, tenantID string, maxAge time.Duration, now time.Time) (*ReturnedList, error) {
	jws, err := jose.ParseSignedCompact(list, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, badCert("returned list: not a JWS compact token with alg EdDSA: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, badCert("returned list: %d signatures, want 1", len(jws.Signatures))
	}
	h := jws.Signatures[0].Header
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != returnedType {
		return nil, badCert("returned list: typ %q, want %q", typ, returnedType)
	}
	pub, ok := k.byKid[h.KeyID]
	if !ok {
		return nil, badCert("returned list: signed by key %q, which the JWKS does not hold", h.KeyID)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return nil, badCert("returned list: signature does not verify with key %q", h.KeyID)
	}
	var raw struct {
		Issuer   string `json:"iss"`
		TenantID string `json:"tenant_id"`
		IssuedAt *int64 `json:"iat"`
		Returned []struct {
			Subject string `json:"sub"`
			Expiry  int64  `json:"exp"`
		} `json:"returned"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, badCert("returned list: claims do not decode: %v", err)
	}
	switch {
	case raw.Issuer != certIssuer:
		return nil, badCert("returned list: issuer %q, want %q", raw.Issuer, certIssuer)
	case raw.TenantID != tenantID:
		return nil, badCert("returned list: of tenant %q, not %q", raw.TenantID, tenantID)
	case raw.IssuedAt == nil:
		return nil, badCert("returned list: no iat")
	}
	iat := time.Unix(*raw.IssuedAt, 0)
	if maxAge > 0 && (now.Sub(iat) > maxAge || iat.Sub(now) > time.Minute) {
		return nil, badCert("returned list: signed at %s, not within %s of now (%s): an old list replayed, or a wrong clock",
			iat.UTC().Format(time.RFC3339), maxAge, now.UTC().Format(time.RFC3339))
	}
	l := &ReturnedList{TenantID: raw.TenantID, IssuedAt: iat, KeyID: h.KeyID, Token: list, returned: make(map[string]time.Time, len(raw.Returned))}
	for _, e := range raw.Returned {
		l.returned[e.Subject] = time.Unix(e.Expiry, 0)
	}
	return l, nil
}

// Check refuses a certificate (its verified claims) that the list names:
// it was returned before its expiry.
func (l *ReturnedList) Check(c Claims) error {
	if l.Returned(c.LeaseID) {
		return &CertificateError{Returned: true,
			Problem: fmt.Sprintf("lease %q was returned early (listed as returned at %s)", c.LeaseID, l.IssuedAt.UTC().Format(time.RFC3339))}
	}
	return nil
}

// VerifyOfflineReturned is VerifyOffline that also refuses a certificate
// named by the signed list of returned certificates returned (the one the
// product kept; "" when it has none yet), which must verify with the same
// JWKS and be of the certificate's tenant. A refused returned certificate
// satisfies errors.Is(err, ErrCertificateReturned).
func VerifyOfflineReturned(cert string, jwks []byte, returned string, now time.Time) (Claims, error) {
	keys, err := ParseSigningKeys(jwks)
	if err != nil {
		return Claims{}, err
	}
	c, err := keys.Verify(cert, now)
	if err != nil || returned == "" {
		return c, err
	}
	list, err := keys.VerifyReturned(returned, c.TenantID, 0, now)
	if err != nil {
		return c, err
	}
	return c, list.Check(c)
}

// FetchReturnedCertificates asks seatd for a tenant's signed list of
// returned certificates ("" is the default tenant). Verify it before
// keeping it (SigningKeys.VerifyReturned, with a maxAge), and keep the
// newer of it and the one kept (Newer).
func (c *Client) FetchReturnedCertificates(ctx context.Context, tenantID string) (string, error) {
	resp, err := c.seats.GetReturnedCertificates(ctx, &seatdv1.GetReturnedCertificatesRequest{TenantId: tenantID})
	if err != nil {
		return "", wrap(err)
	}
	return resp.GetReturnedCertificates(), nil
}
