package grpcapi

import (
	"time"

	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

type protoadaptMessage = protoadapt.MessageV1

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func dur(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

var strategyToProto = map[server.LeasingStrategy]seatdv1.LeasingStrategy{
	server.PerFingerprint: seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_FINGERPRINT,
	server.PerUser:        seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_USER,
	server.PerHostname:    seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_HOSTNAME,
	server.PerAcquisition: seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_ACQUISITION,
}

var strategyFromProto = map[seatdv1.LeasingStrategy]server.LeasingStrategy{
	seatdv1.LeasingStrategy_LEASING_STRATEGY_UNSPECIFIED:     server.PerFingerprint,
	seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_FINGERPRINT: server.PerFingerprint,
	seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_USER:        server.PerUser,
	seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_HOSTNAME:    server.PerHostname,
	seatdv1.LeasingStrategy_LEASING_STRATEGY_PER_ACQUISITION: server.PerAcquisition,
}

var stateToProto = map[server.LeaseState]seatdv1.LeaseState{
	server.LeaseActive:   seatdv1.LeaseState_LEASE_STATE_ACTIVE,
	server.LeaseReleased: seatdv1.LeaseState_LEASE_STATE_RELEASED,
	server.LeaseExpired:  seatdv1.LeaseState_LEASE_STATE_EXPIRED,
	server.LeaseRevoked:  seatdv1.LeaseState_LEASE_STATE_REVOKED,
}

var stateFromProto = map[seatdv1.LeaseState]server.LeaseState{
	seatdv1.LeaseState_LEASE_STATE_UNSPECIFIED: "",
	seatdv1.LeaseState_LEASE_STATE_ACTIVE:      server.LeaseActive,
	seatdv1.LeaseState_LEASE_STATE_RELEASED:    server.LeaseReleased,
	seatdv1.LeaseState_LEASE_STATE_EXPIRED:     server.LeaseExpired,
	seatdv1.LeaseState_LEASE_STATE_REVOKED:     server.LeaseRevoked,
}

func licenseToProto(l server.License) *seatdv1.License {
	active := l.Active
	return &seatdv1.License{
		Id:                l.ID,
		Key:               l.Key,
		Seats:             int32(l.Seats),
		LeaseTtl:          durationpb.New(l.LeaseTTL),
		Active:            &active,
		TenantId:          l.TenantID,
		Name:              l.Name,
		Overdraft:         int32(l.Overdraft),
		RevivalWindow:     dur(l.RevivalWindow),
		LeasingStrategy:   strategyToProto[l.LeasingStrategy],
		ExpiresAt:         ts(l.ExpiresAt),
		Metadata:          l.Metadata,
		CreateTime:        ts(l.CreatedAt),
		UpdateTime:        ts(l.UpdatedAt),
		MaxBorrowDuration: dur(l.MaxBorrowDuration), // unset: 0, no borrowing
		MaxBorrowedSeats:  int32(l.MaxBorrowedSeats),
		AllowEarlyReturn:  l.AllowEarlyReturn,
		Grants:            grantsToProto(l.Grants),
	}
}

func grantsToProto(gs []server.Grant) []*seatdv1.FeatureGrant {
	var out []*seatdv1.FeatureGrant
	for _, g := range gs {
		out = append(out, grantToProto(g))
	}
	return out
}

// licenseViewToProto is licenseToProto with the seats in use counted.
func licenseViewToProto(v service.LicenseView) *seatdv1.License {
	l := licenseToProto(v.License)
	l.SeatsInUse = int32(v.SeatsInUse)
	l.Waiting = int32(v.Waiting)
	for _, g := range l.Grants {
		g.SeatsInUse = int32(v.GrantsInUse[g.GetId()])
	}
	return l
}

// leaseToProto omits secrets (token hash) and shows the state as judged at
// now (service.StateAt). A lease of a grant shows its license's id as
// license_id and the grant's as grant_id (its store's LicenseID is the
// grant's).
func leaseToProto(l server.Lease, now time.Time) *seatdv1.Lease {
	return &seatdv1.Lease{
		Id:              l.ID,
		LicenseId:       l.LicenseOf(),
		GrantId:         l.GrantID(),
		Feature:         l.Feature,
		Version:         l.Version,
		Fingerprint:     l.Fingerprint,
		State:           stateToProto[service.StateAt(l, now)],
		AcquiredAt:      ts(l.AcquiredAt),
		ExpiresAt:       ts(l.ExpiresAt),
		User:            l.User,
		Hostname:        l.Hostname,
		Metadata:        l.Metadata,
		LastHeartbeatAt: ts(l.LastHeartbeatAt),
		EndedAt:         ts(l.EndedAt),
		Borrowed:        l.Borrowed,
		ReservedFor:     reservedForToProto(l.Reservation),
		Lingering:       l.Lingering,
	}
}

// reservedForToProto is whose reserved seat a lease holds (nil: a shared
// seat, or a key this version cannot read, which it does not guess at).
func reservedForToProto(key string) *seatdv1.PolicySubject {
	s, ok := server.ReservationSubject(key)
	if !ok {
		return nil
	}
	return &seatdv1.PolicySubject{Kind: subjectKindToProto[s.Kind], Name: s.Name}
}

// quotasToProto shows the quotas a tenant is held to.
func quotasToProto(q Quotas) *seatdv1.TenantQuotas {
	return &seatdv1.TenantQuotas{MaxLicenses: q.Licenses, MaxSeats: q.Seats, MaxApiKeys: q.APIKeys}
}

// tenantToProto shows the tenant with the quotas this server holds it to.
func (s *Server) tenantToProto(t server.Tenant) *seatdv1.Tenant {
	return &seatdv1.Tenant{Id: t.ID, Name: t.Name, CreateTime: ts(t.CreatedAt), Quotas: quotasToProto(s.svc.Quotas())}
}

func apiKeyToProto(k server.APIKey) *seatdv1.ApiKey {
	return &seatdv1.ApiKey{
		Id: k.ID, TenantId: k.TenantID, Name: k.Name, CreateTime: ts(k.CreatedAt), RevokeTime: ts(k.RevokedAt),
		Role: string(k.KeyRole()),
	}
}
