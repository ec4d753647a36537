package service

import (
	"context"

	"github.com/seatd/seatd/server"
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
}

// Grant is a seat taken, with the lease token that only the client gets.
type Grant struct {
	server.AcquireResult
	Token string
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

// acquire makes the lease's id and token and asks the store for the seat.
func (s *Service) acquire(ctx context.Context, req SeatRequest) (Grant, error) {
	token := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.store.Acquire(ctx, server.AcquireRequest{
		LicenseKey: req.LicenseKey, Fingerprint: req.Fingerprint, User: req.User, Hostname: req.Hostname,
		Metadata: req.Metadata, IdempotencyKey: req.IdempotencyKey,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(token),
	})
	return Grant{AcquireResult: res, Token: token}, err
}

// Release ends the lease its token opens (server.LeaseStore.Release).
func (s *Service) Release(ctx context.Context, leaseID, token string) (server.Lease, error) {
	l, err := s.store.Release(ctx, leaseID, server.HashSecret(token))
	s.okReleases.count(s.metrics.Releases, err)
	return l, err
}
