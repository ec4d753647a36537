package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/signing"
)

// SeatRequest is what a client sends to take a seat (AcquireSeat and
// WaitForSeat), already checked by the caller.
type SeatRequest struct {
	LicenseKey     string
	Fingerprint    string
	User           string
	Hostname       string
	IdempotencyKey string
	Metadata       map[string]string
	// Nonce is repeated in the lease certificate (CheckNonce).
	Nonce string
	// BorrowFor > 0 borrows the seat for offline use
	// (server.AcquireRequest.BorrowFor).
	BorrowFor time.Duration
	// Feature != "" takes a seat of one of the license's grants of that
	// feature covering Version ("" any) instead of the base pool
	// (server.AcquireRequest.Feature); CheckFeatureRequest.
	Feature, Version string
}

// CheckFeatureRequest refuses a feature name or version a request may not
// ask for, naming the field: a version is dotted numbers and asks only
// with a feature.
func CheckFeatureRequest(feature, version string) error {
	if feature == "" {
		if version != "" {
			return server.Invalid("version", "names the version of a feature: set feature too (the base pool has no versions)")
		}
		return nil
	}
	if err := server.CheckFeature("feature", feature); err != nil {
		return err
	}
	if version == "" {
		return nil
	}
	return server.CheckVersion("version", version)
}

// Grant is a seat taken, with the lease token that only the client gets
// and the lease's certificate.
type Grant struct {
	server.AcquireResult
	Token       string
	Certificate string
}

// Acquire takes a seat, or re-finds the caller's (server.LeaseStore.Acquire).
func (s *Service) Acquire(ctx context.Context, req SeatRequest) (Grant, error) {
	g, err := s.acquire(ctx, req)
	s.okAcquisitions.count(s.metrics.Acquisitions, err)
	return g, err
}

// AcquisitionRefused counts an acquisition its caller refused before it
// reached Acquire (a malformed request), so that the acquisitions metric
// counts every call.
func (s *Service) AcquisitionRefused(err error) {
	s.okAcquisitions.count(s.metrics.Acquisitions, err)
}

// acquire makes the lease's id and token, asks the store for the seat and
// signs the lease's certificate. A certificate that cannot be signed fails
// the call with the seat taken: a retry (same fingerprint or idempotency
// key) finds the lease again.
func (s *Service) acquire(ctx context.Context, req SeatRequest) (Grant, error) {
	if err := CheckNonce(req.Nonce); err != nil {
		return Grant{}, err
	}
	if req.BorrowFor < 0 {
		return Grant{}, server.Invalid("borrow_duration", "must be positive")
	}
	if err := CheckFeatureRequest(req.Feature, req.Version); err != nil {
		return Grant{}, err
	}
	token := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.store.Acquire(ctx, server.AcquireRequest{
		LicenseKey: req.LicenseKey, Fingerprint: req.Fingerprint, User: req.User, Hostname: req.Hostname,
		Metadata: req.Metadata, IdempotencyKey: req.IdempotencyKey,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(token),
		BorrowFor: req.BorrowFor, Feature: req.Feature, Version: req.Version,
	})
	if err != nil {
		return Grant{AcquireResult: res, Token: token}, err
	}
	s.signals.Granted(&res) // license.peak: a comparison unless the pool is near its limit
	b := signing.Binding{KeyHash: signing.LicenseKeyHash(req.LicenseKey), Nonce: req.Nonce}
	if res.Grant != nil {
		b.GrantExpiresAt, b.GrantVersion = res.Grant.ExpiresAt, res.Grant.Version
	}
	cert, err := s.certify(ctx, res.Lease, b)
	if err != nil {
		return Grant{}, err
	}
	return Grant{AcquireResult: res, Token: token, Certificate: cert}, nil
}

// Release ends the lease its token opens (server.LeaseStore.Release).
func (s *Service) Release(ctx context.Context, leaseID, token string) (server.Lease, error) {
	l, err := s.store.Release(ctx, leaseID, server.HashSecret(token))
	s.okReleases.count(s.metrics.Releases, err)
	return l, err
}
