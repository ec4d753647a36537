package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
)

type adminService struct {
	seatdv1.UnimplementedAdminServiceServer
	s *Server
}

var _ seatdv1.AdminServiceServer = (*adminService)(nil)

// audit records an admin action. The action already happened, so a failure
// to record it is logged rather than returned.
func (s *Server) audit(ctx context.Context, p Principal, tenantID, action, resource, id string, details map[string]string) {
	err := s.store.AppendAudit(ctx, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: tenantID, Actor: p.Actor(), Action: action,
		Resource: resource, ResourceID: id, Details: details, At: s.now(),
	})
	if err != nil {
		s.log.ErrorContext(ctx, "audit entry not written", "action", action, "resource_id", id, "err", err)
	}
}

func (h *adminService) CreateLicense(ctx context.Context, req *seatdv1.CreateLicenseRequest) (*seatdv1.CreateLicenseResponse, error) {
	l, err := h.createLicense(ctx, req)
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateLicenseResponse{License: licenseToProto(l)}, nil
}

func (h *adminService) createLicense(ctx context.Context, req *seatdv1.CreateLicenseRequest) (server.License, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err != nil {
		return server.License{}, err
	}
	in := req.GetLicense()
	if in == nil {
		return server.License{}, server.Invalid("license", "is required")
	}
	if in.GetId() != "" {
		return server.License{}, server.Invalid("license.id", "is assigned by the server; leave it empty")
	}
	if in.GetSeats() == 0 {
		return server.License{}, server.Invalid("license.seats", "is required (at least 1)")
	}
	now := h.s.now()
	l := server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tenant, Key: in.GetKey(),
		CreatedAt: now, UpdatedAt: now,
	}
	for _, path := range updatableLicenseFields {
		if err := licenseField(&l, in, path, now); err != nil {
			return server.License{}, err
		}
	}
	if l.Key == "" {
		l.Key = server.NewSecret(server.PrefixLicenseKey)
	} else if !secretPattern.MatchString(l.Key) {
		return server.License{}, server.Invalid("license.key", "must be 16-256 printable ASCII characters without spaces")
	}
	l, err = h.s.store.CreateLicense(ctx, l)
	if err != nil {
		return server.License{}, err
	}
	h.s.audit(ctx, p, tenant, "license.create", "license", l.ID, map[string]string{"seats": itoa(l.Seats)})
	return l, nil
}

func (h *adminService) GetLicense(ctx context.Context, req *seatdv1.GetLicenseRequest) (*seatdv1.GetLicenseResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.store.GetLicense(ctx, tenant, req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetLicenseResponse{License: licenseToProto(l)}, nil
}

func (h *adminService) ListLicenses(ctx context.Context, req *seatdv1.ListLicensesRequest) (*seatdv1.ListLicensesResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListLicensesResponse, error) {
		ls, next, err := h.s.store.ListLicenses(ctx, tenant, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListLicensesResponse{NextPageToken: next}
		for _, l := range ls {
			resp.Licenses = append(resp.Licenses, licenseToProto(l))
		}
		return resp, nil
	})
}

func (h *adminService) UpdateLicense(ctx context.Context, req *seatdv1.UpdateLicenseRequest) (*seatdv1.UpdateLicenseResponse, error) {
	l, err := h.updateLicense(ctx, req)
	if err != nil {
		return nil, err
	}
	return &seatdv1.UpdateLicenseResponse{License: licenseToProto(l)}, nil
}

func (h *adminService) updateLicense(ctx context.Context, req *seatdv1.UpdateLicenseRequest) (server.License, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err != nil {
		return server.License{}, err
	}
	in := req.GetLicense()
	if in == nil {
		return server.License{}, server.Invalid("license", "is required")
	}
	if err := required("license.id", in.GetId()); err != nil {
		return server.License{}, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return server.License{}, server.Invalid("update_mask", "name at least one field to change")
	}
	now := h.s.now()
	// Validate before touching the store, so bad input never reaches it.
	var probe server.License
	for _, path := range paths {
		if err := licenseField(&probe, in, path, now); err != nil {
			return server.License{}, err
		}
	}
	l, err := h.s.store.UpdateLicense(ctx, tenant, in.GetId(), func(l *server.License) error {
		for _, path := range paths {
			if err := licenseField(l, in, path, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return server.License{}, err
	}
	details := map[string]string{}
	for _, path := range paths {
		details["field."+path] = "changed"
	}
	h.s.audit(ctx, p, tenant, "license.update", "license", l.ID, details)
	return l, nil
}

func (h *adminService) DeleteLicense(ctx context.Context, req *seatdv1.DeleteLicenseRequest) (*seatdv1.DeleteLicenseResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err != nil {
		return nil, err
	}
	n, err := h.s.store.DeleteLicense(ctx, tenant, req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	h.s.audit(ctx, p, tenant, "license.delete", "license", req.GetLicenseId(), map[string]string{"revoked_leases": itoa(n)})
	return &seatdv1.DeleteLicenseResponse{RevokedLeases: int32(n)}, nil
}

func (h *adminService) ListLeases(ctx context.Context, req *seatdv1.ListLeasesRequest) (*seatdv1.ListLeasesResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	state, ok := stateFromProto[req.GetState()]
	if err == nil && !ok {
		err = server.Invalid("state", "is not a known lease state")
	}
	if err != nil {
		return nil, err
	}
	// The filter is on the state as listed: an active lease past its
	// deadline is EXPIRED (strict expiry) before cleanup records it. So
	// EXPIRED reads every recorded state and ACTIVE drops the lapsed; a page
	// may then hold fewer than page_size leases.
	recorded := state
	if state == server.LeaseExpired {
		recorded = ""
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListLeasesResponse, error) {
		ls, next, err := h.s.store.ListLeases(ctx, tenant, req.GetLicenseId(), recorded, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		now := h.s.now()
		resp := &seatdv1.ListLeasesResponse{NextPageToken: next}
		for _, l := range ls {
			pl := leaseToProto(l, now)
			if state != "" && pl.GetState() != req.GetState() {
				continue
			}
			resp.Leases = append(resp.Leases, pl)
		}
		return resp, nil
	})
}

func (h *adminService) RevokeLease(ctx context.Context, req *seatdv1.RevokeLeaseRequest) (*seatdv1.RevokeLeaseResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err == nil {
		err = required("lease_id", req.GetLeaseId())
	}
	if err == nil {
		err = maxLen("reason", req.GetReason(), 1024)
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.store.Revoke(ctx, tenant, req.GetLeaseId())
	if err != nil {
		return nil, err
	}
	h.s.revocations.Revoked(ctx, l.ID)
	h.s.audit(ctx, p, tenant, "lease.revoke", "lease", l.ID, map[string]string{"license_id": l.LicenseID, "reason": req.GetReason()})
	return &seatdv1.RevokeLeaseResponse{Lease: leaseToProto(l, h.s.now())}, nil
}

func runToProto(r cleanup.Run) *seatdv1.CleanupRun {
	return &seatdv1.CleanupRun{
		StartedAt: timestamppb.New(r.StartedAt), Duration: durationpb.New(r.Duration),
		Scanned: r.Scanned, Expired: r.Expired, Result: r.Result, Trigger: r.Trigger, Errors: r.Errors,
	}
}

func (h *adminService) Cleanup(ctx context.Context, _ *seatdv1.CleanupRequest) (*seatdv1.CleanupResponse, error) {
	p := principalFrom(ctx)
	if err := p.requireOperator(); err != nil {
		return nil, err
	}
	run := h.s.cleaner.Pass(ctx, cleanup.TriggerManual)
	h.s.audit(ctx, p, server.DefaultTenantID, "cleanup.run", "cleanup", "", map[string]string{
		"expired": itoa(int(run.Expired)), "result": run.Result,
	})
	return &seatdv1.CleanupResponse{Run: runToProto(run)}, nil
}

func (h *adminService) GetCleanupStatus(ctx context.Context, _ *seatdv1.GetCleanupStatusRequest) (*seatdv1.GetCleanupStatusResponse, error) {
	if err := principalFrom(ctx).requireOperator(); err != nil {
		return nil, err
	}
	resp := &seatdv1.GetCleanupStatusResponse{
		IsLeader:   h.s.leadership.IsLeader(),
		InstanceId: h.s.leadership.InstanceID(),
	}
	leader, err := h.s.leadership.LeaderID(ctx)
	switch {
	case err == nil:
		resp.LeaderId = leader
	case resp.IsLeader:
		resp.LeaderId = resp.InstanceId
	default:
		// The rest of the status is local and still worth answering.
		h.s.log.WarnContext(ctx, "cleanup status: cannot ask PostgreSQL who leads", "err", err)
	}
	if run, ok := h.s.cleaner.LastRun(); ok {
		resp.LastRun = runToProto(run)
	}
	if h.s.scheduler != nil {
		resp.Interval = durationpb.New(h.s.scheduler.Interval)
		if next := h.s.scheduler.NextRun(); !next.IsZero() {
			resp.NextRunAt = timestamppb.New(next)
		}
	}
	return resp, nil
}

func (h *adminService) GetZombieReport(ctx context.Context, req *seatdv1.GetZombieReportRequest) (*seatdv1.GetZombieReportResponse, error) {
	q, err := h.zombieQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := h.s.store.ZombieReport(ctx, q)
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.GetZombieReportResponse{
		StartTime: timestamppb.New(q.Start), EndTime: timestamppb.New(q.End),
		MeanMinutesToCleanup: r.MeanMinutesToCleanup, ZombiesTotal: r.Total,
	}
	for _, d := range r.Days {
		resp.Days = append(resp.Days, &seatdv1.ZombieDay{Date: d.Date, ZombiesCleaned: d.ZombiesCleaned, AffectedLicenses: d.AffectedLicenses})
	}
	for _, l := range r.TopLicenses {
		resp.TopLicenses = append(resp.TopLicenses, &seatdv1.LicenseZombies{
			LicenseId: l.LicenseID, LicenseName: l.LicenseName, ZombieCount: l.ZombieCount,
			LeaseCount: l.LeaseCount, ZombiePercentage: l.Percentage,
		})
	}
	return resp, nil
}

func (h *adminService) zombieQuery(ctx context.Context, req *seatdv1.GetZombieReportRequest) (server.ZombieQuery, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return server.ZombieQuery{}, err
	}
	q := server.ZombieQuery{TenantID: tenant, End: h.s.now(), TopLimit: 20}
	if req.GetEndTime() != nil {
		if err := req.GetEndTime().CheckValid(); err != nil {
			return q, server.Invalid("end_time", "is not a valid timestamp")
		}
		q.End = req.GetEndTime().AsTime()
	}
	q.Start = q.End.Add(-7 * 24 * time.Hour)
	if req.GetStartTime() != nil {
		if err := req.GetStartTime().CheckValid(); err != nil {
			return q, server.Invalid("start_time", "is not a valid timestamp")
		}
		q.Start = req.GetStartTime().AsTime()
	}
	if !q.Start.Before(q.End) {
		return q, server.Invalid("start_time", "must be before end_time")
	}
	if n := req.GetTopLimit(); n != 0 {
		if n < 1 || n > 100 {
			return q, server.Invalid("top_limit", "must be between 1 and 100")
		}
		q.TopLimit = int(n)
	}
	return q, nil
}

func (h *adminService) CreateTenant(ctx context.Context, req *seatdv1.CreateTenantRequest) (*seatdv1.CreateTenantResponse, error) {
	p := principalFrom(ctx)
	t := server.Tenant{ID: req.GetTenant().GetId(), Name: req.GetTenant().GetName(), CreatedAt: h.s.now()}
	err := p.requireOperator()
	if err == nil && t.ID == "" {
		t.ID = server.NewID("t-")
	}
	if err == nil {
		err = validTenantID("tenant.id", t.ID)
	}
	if err == nil {
		err = maxLen("tenant.name", t.Name, server.MaxLabelLength)
	}
	if err != nil {
		return nil, err
	}
	t, err = h.s.store.CreateTenant(ctx, t)
	if err != nil {
		return nil, err
	}
	h.s.audit(ctx, p, t.ID, "tenant.create", "tenant", t.ID, nil)
	return &seatdv1.CreateTenantResponse{Tenant: tenantToProto(t)}, nil
}

func (h *adminService) ListTenants(ctx context.Context, req *seatdv1.ListTenantsRequest) (*seatdv1.ListTenantsResponse, error) {
	err := principalFrom(ctx).requireOperator()
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	ts, next, err := h.s.store.ListTenants(ctx, server.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListTenantsResponse{NextPageToken: next}
	for _, t := range ts {
		resp.Tenants = append(resp.Tenants, tenantToProto(t))
	}
	return resp, nil
}

func (h *adminService) CreateApiKey(ctx context.Context, req *seatdv1.CreateApiKeyRequest) (*seatdv1.CreateApiKeyResponse, error) {
	p := principalFrom(ctx)
	err := p.requireOperator()
	if err == nil {
		err = validTenantID("tenant_id", req.GetTenantId())
	}
	if err == nil {
		err = maxLen("name", req.GetName(), server.MaxLabelLength)
	}
	if err != nil {
		return nil, err
	}
	secret := server.NewSecret(server.PrefixAPISecret)
	k, err := h.s.store.CreateAPIKey(ctx, server.APIKey{
		ID: server.NewID(server.PrefixAPIKeyID), TenantID: req.GetTenantId(), Name: req.GetName(),
		SecretHash: server.HashSecret(secret), CreatedAt: h.s.now(),
	})
	if err != nil {
		return nil, err
	}
	h.s.audit(ctx, p, k.TenantID, "apikey.create", "api_key", k.ID, nil)
	return &seatdv1.CreateApiKeyResponse{ApiKey: apiKeyToProto(k), Secret: secret}, nil
}

func (h *adminService) ListApiKeys(ctx context.Context, req *seatdv1.ListApiKeysRequest) (*seatdv1.ListApiKeysResponse, error) {
	err := principalFrom(ctx).requireOperator()
	if err == nil {
		err = validTenantID("tenant_id", req.GetTenantId())
	}
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	ks, next, err := h.s.store.ListAPIKeys(ctx, req.GetTenantId(), server.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListApiKeysResponse{NextPageToken: next}
	for _, k := range ks {
		resp.ApiKeys = append(resp.ApiKeys, apiKeyToProto(k))
	}
	return resp, nil
}

func (h *adminService) RevokeApiKey(ctx context.Context, req *seatdv1.RevokeApiKeyRequest) (*seatdv1.RevokeApiKeyResponse, error) {
	p := principalFrom(ctx)
	err := p.requireOperator()
	if err == nil {
		err = required("api_key_id", req.GetApiKeyId())
	}
	if err != nil {
		return nil, err
	}
	k, err := h.s.store.RevokeAPIKey(ctx, req.GetApiKeyId())
	if err != nil {
		return nil, err
	}
	h.s.audit(ctx, p, k.TenantID, "apikey.revoke", "api_key", k.ID, nil)
	return &seatdv1.RevokeApiKeyResponse{ApiKey: apiKeyToProto(k)}, nil
}

func itoa(n int) string { return formatInt(int64(n)) }
