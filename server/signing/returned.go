package signing

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/seatd/seatd/server"
)

// ReturnedType is the typ header of a signed list of returned
// certificates: a verifier refuses a lease certificate (typ JWT) offered
// as a list, and a list offered as a certificate.
const ReturnedType = "seatd-returned+jwt"

// ReturnedEntry names one returned certificate: its sub (the lease id)
// and its exp (Unix seconds, as the certificate says it).
type ReturnedEntry struct {
	Subject string `json:"sub"`
	Expiry  int64  `json:"exp"`
}

// ReturnedList is the payload of a tenant's signed list of returned
// certificates (GetReturnedCertificates).
type ReturnedList struct {
	Issuer   string          `json:"iss"` // IssuerName
	TenantID string          `json:"tenant_id"`
	IssuedAt int64           `json:"iat"` // Unix seconds: when it was signed
	Returned []ReturnedEntry `json:"returned"`
}

// ReturnedList signs the list of the tenant's returned certificates rcs
// with the tenant's key that signs certificates now, issued now; in
// locked mode the site tenant's with the site key, so that a product
// that trusts only the chain from the vendor's key checks it too.
func (i *Issuer) ReturnedList(ctx context.Context, tenantID string, rcs []server.ReturnedCertificate) (string, error) {
	st, err := i.state(ctx, tenantID)
	if err != nil {
		return "", err
	}
	signer := st.signer
	if i.site != nil && tenantID == SiteTenant {
		signer = i.site.signer
	} else if st.openErr != nil {
		return "", &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: st.openErr}
	}
	list := ReturnedList{Issuer: IssuerName, TenantID: tenantID, IssuedAt: i.now().Unix(), Returned: make([]ReturnedEntry, len(rcs))}
	for j, rc := range rcs {
		list.Returned[j] = ReturnedEntry{Subject: rc.LeaseID, Expiry: rc.ExpiresAt.Unix()}
	}
	token, err := signer.signReturned(list)
	if err != nil {
		return "", &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
	}
	return token, nil
}

func (s *keySigner) signReturned(list ReturnedList) (string, error) {
	payload, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("returned list: %w", err)
	}
	jws, err := s.returned.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign returned list with key %s: %w", s.kid, err)
	}
	return jws.CompactSerialize()
}

func newReturnedSigner(kid string, key any) (jose.Signer, error) {
	return jose.NewSigner(
		jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType(ReturnedType),
	)
}
