package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/signing"
)

// GetSigningKeys publishes a tenant's public keys as a JWKS. It needs no
// credentials: it is a SeatService method, which the Authenticator lets
// through (REST: GET /v1/tenants/{tenant_id}/jwks.json, whose answer is
// the JWKS document itself).
func (h *seatService) GetSigningKeys(ctx context.Context, req *seatdv1.GetSigningKeysRequest) (*seatdv1.GetSigningKeysResponse, error) {
	tenant := req.GetTenantId()
	if tenant == "" {
		tenant = server.DefaultTenantID
	}
	if err := validTenantID("tenant_id", tenant); err != nil {
		return nil, err
	}
	keys, err := h.s.svc.GetSigningKeys(ctx, tenant)
	if err != nil {
		return nil, err
	}
	jwks, err := convertAll(keys, jwkToProto)
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetSigningKeysResponse{Keys: jwks}, nil
}

// GetReturnedCertificates publishes the tenant's signed list of returned
// borrowed certificates; like the JWKS it needs no credentials (REST: GET
// /v1/tenants/{tenant_id}/returned.jwt, whose answer is the JWS as one JSON string).
func (h *seatService) GetReturnedCertificates(ctx context.Context, req *seatdv1.GetReturnedCertificatesRequest) (*seatdv1.GetReturnedCertificatesResponse, error) {
	tenant := req.GetTenantId()
	if tenant == "" {
		tenant = server.DefaultTenantID
	}
	if err := validTenantID("tenant_id", tenant); err != nil {
		return nil, err
	}
	list, err := h.s.svc.ReturnedCertificates(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetReturnedCertificatesResponse{ReturnedCertificates: list}, nil
}

func (h *adminService) ListSigningKeys(ctx context.Context, req *seatdv1.ListSigningKeysRequest) (*seatdv1.ListSigningKeysResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	keys, err := h.s.svc.ListSigningKeys(ctx, tenant)
	if err != nil {
		return nil, err
	}
	pks, err := convertAll(keys, signingKeyToProto)
	if err != nil {
		return nil, err
	}
	return &seatdv1.ListSigningKeysResponse{SigningKeys: pks}, nil
}

func (h *adminService) RotateSigningKey(ctx context.Context, req *seatdv1.RotateSigningKeyRequest) (*seatdv1.RotateSigningKeyResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	k, err := h.s.svc.RotateSigningKey(ctx, p.Actor(), tenant)
	if err != nil {
		return nil, err
	}
	pk, err := signingKeyToProto(k)
	if err != nil {
		return nil, err
	}
	return &seatdv1.RotateSigningKeyResponse{SigningKey: pk}, nil
}

// jwkToProto is the public half of k as a JWK (signing.PublicJWK).
// convertAll converts every key, or fails with the first error.
func convertAll[P any](keys []server.SigningKey, to func(server.SigningKey) (P, error)) ([]P, error) {
	out := make([]P, 0, len(keys))
	for _, k := range keys {
		p, err := to(k)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func jwkToProto(k server.SigningKey) (*seatdv1.JsonWebKey, error) {
	jwk, err := signing.PublicJWK(k)
	if err != nil {
		return nil, &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
	}
	return &seatdv1.JsonWebKey{Kty: jwk.Kty, Crv: jwk.Crv, X: jwk.X, Kid: jwk.Kid, Use: jwk.Use, Alg: jwk.Alg}, nil
}

// signingKeyToProto shows a key's public half only: the message has no
// field for the private one.
func signingKeyToProto(k server.SigningKey) (*seatdv1.SigningKey, error) {
	jwk, err := jwkToProto(k)
	if err != nil {
		return nil, err
	}
	return &seatdv1.SigningKey{
		Kid: k.ID, TenantId: k.TenantID, CreateTime: ts(k.CreatedAt), RetireTime: ts(k.RetiredAt),
		PublishUntil: ts(service.PublishUntil(k)), PublicKey: jwk, State: signingKeyStateToProto(k.State()),
	}, nil
}

func signingKeyStateToProto(s server.SigningKeyState) seatdv1.SigningKeyState {
	switch s {
	case server.KeySigning:
		return seatdv1.SigningKeyState_SIGNING_KEY_STATE_SIGNING
	case server.KeyNext:
		return seatdv1.SigningKeyState_SIGNING_KEY_STATE_NEXT
	case server.KeyRetired:
		return seatdv1.SigningKeyState_SIGNING_KEY_STATE_RETIRED
	}
	return seatdv1.SigningKeyState_SIGNING_KEY_STATE_UNSPECIFIED
}
