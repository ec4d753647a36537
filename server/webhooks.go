package server

import (
	"context"
	"encoding/json"
	"time"
)

// Events (invariant 14): a store writes an Event into its outbox in the
// same transaction as the change it reports, so that a crash can neither
// lose one nor invent one. Events that report no change of the record
// (license.expiring, license.exhausted, license.peak) are appended with a
// dedupe key, once per threshold or window. server/webhooks renders and
// delivers them.

// EventType names what an event reports.
type EventType string

const (
	EventLicenseCreated   EventType = "license.created"
	EventLicenseUpdated   EventType = "license.updated"
	EventLicenseDeleted   EventType = "license.deleted"
	EventLicenseExpiring  EventType = "license.expiring"
	EventLicenseExhausted EventType = "license.exhausted"
	EventLicensePeak      EventType = "license.peak"
	EventLeaseRevoked     EventType = "lease.revoked"
	EventLeaseExpired     EventType = "lease.expired"
	EventLeaseBorrowed    EventType = "lease.borrowed"
	EventAPIKeyRevoked    EventType = "apikey.revoked"
	// EventEndpointDisabled: an endpoint failing continuously was disabled.
	EventEndpointDisabled EventType = "webhook_endpoint.disabled"
)

// EventTypes are every type an endpoint may subscribe to.
var EventTypes = []EventType{
	EventLicenseCreated, EventLicenseUpdated, EventLicenseDeleted, EventLicenseExpiring,
	EventLicenseExhausted, EventLicensePeak, EventLeaseRevoked, EventLeaseExpired,
	EventLeaseBorrowed, EventAPIKeyRevoked, EventEndpointDisabled,
}

// Known reports whether t is one of EventTypes.
func (t EventType) Known() bool {
	for _, k := range EventTypes {
		if k == t {
			return true
		}
	}
	return false
}

// Event is one entry of a store's outbox.
type Event struct {
	ID        string    `json:"id"`  // evt_…: a receiver drops duplicates by it
	Seq       int64     `json:"seq"` // the store's order of writing (ascending, gaps allowed)
	Type      EventType `json:"type"`
	At        time.Time `json:"at"`
	TenantID  string    `json:"tenant_id"`
	LicenseID string    `json:"license_id,omitempty"` // the license (never a grant's id); "" for an API key's
	// SubjectID is what the event is about: the lease, license, API key
	// or endpoint id.
	SubjectID string `json:"subject_id"`
	// DedupeKey, when set, makes AppendEvent write the event once.
	DedupeKey string `json:"dedupe_key,omitempty"`
	// Data is the JSON of an EventData.
	Data json.RawMessage `json:"data"`
}

// EventData is what an event's payload carries: the resources it names.
type EventData struct {
	License  *EventLicense  `json:"license,omitempty"`
	Lease    *EventLease    `json:"lease,omitempty"`
	APIKey   *EventAPIKey   `json:"api_key,omitempty"`
	Seats    *EventSeats    `json:"seats,omitempty"`
	Endpoint *EventEndpoint `json:"endpoint,omitempty"`
	// Change says what a license.updated event reports: the license's
	// own settings (ChangeSettings), one of its feature grants (Grant
	// names it) or its site policy.
	Change LicenseChange `json:"change,omitempty"`
	Grant  *EventGrant   `json:"grant,omitempty"`
}

// LicenseChange is what changed of a license (license.updated).
type LicenseChange string

const (
	ChangeSettings     LicenseChange = "settings"      // UpdateLicense
	ChangeGrantCreated LicenseChange = "grant.created" // CreateGrant
	ChangeGrantUpdated LicenseChange = "grant.updated" // UpdateGrant
	ChangeGrantDeleted LicenseChange = "grant.deleted" // DeleteGrant (its leases' lease.revoked before)
	ChangePolicy       LicenseChange = "policy"        // SetPolicy
)

// EventGrant is a feature grant as a license.updated event shows it: as
// created or updated, or as it was when deleted.
type EventGrant struct {
	ID        string    `json:"id"`
	Feature   string    `json:"feature"`
	Version   string    `json:"version,omitempty"`
	Seats     int       `json:"seats"`
	Overdraft int       `json:"overdraft,omitempty"`
	StartsAt  time.Time `json:"starts_at,omitzero"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// EventLicense is a license as an event shows it.
type EventLicense struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Seats     int       `json:"seats"`
	Overdraft int       `json:"overdraft,omitempty"`
	Active    bool      `json:"active"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// GrantID and Feature: a grant's expiry (license.expiring).
	GrantID string `json:"grant_id,omitempty"`
	Feature string `json:"feature,omitempty"`
	// PolicyRules: the rules of its site policy (0: none).
	PolicyRules int `json:"policy_rules,omitempty"`
}

// EventLease is a lease as an event shows it.
type EventLease struct {
	ID              string     `json:"id"`
	LicenseID       string     `json:"license_id"`
	GrantID         string     `json:"grant_id,omitempty"`
	Feature         string     `json:"feature,omitempty"`
	User            string     `json:"user,omitempty"`
	Hostname        string     `json:"hostname,omitempty"`
	State           LeaseState `json:"state"`
	Borrowed        bool       `json:"borrowed,omitempty"`
	AcquiredAt      time.Time  `json:"acquired_at"`
	LastHeartbeatAt time.Time  `json:"last_heartbeat_at"`
	ExpiresAt       time.Time  `json:"expires_at"`
	EndedAt         time.Time  `json:"ended_at,omitzero"`
}

// EventAPIKey is an API key as an event shows it (never its secret).
type EventAPIKey struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// EventSeats is a pool's use (license.exhausted, license.peak).
type EventSeats struct {
	PoolID string `json:"pool_id"` // the license's id, or a grant's
	Limit  int    `json:"limit"`
	InUse  int    `json:"in_use"`
	// Share: the threshold crossed (license.peak), in percent.
	Share int `json:"share,omitempty"`
}

// EventEndpoint names an endpoint (webhook_endpoint.disabled).
type EventEndpoint struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Reason string `json:"reason,omitempty"`
}

// EventOfLease is the event of a lease that ended revoked or expired, or
// was borrowed.
func EventOfLease(t EventType, l *Lease, at time.Time) Event {
	d := EventLease{
		ID: l.ID, LicenseID: PoolLicense(l.LicenseID), Feature: l.Feature, User: l.User,
		Hostname: l.Hostname, State: l.State, Borrowed: l.Borrowed, AcquiredAt: l.AcquiredAt,
		LastHeartbeatAt: l.LastHeartbeatAt, ExpiresAt: l.ExpiresAt, EndedAt: l.EndedAt,
	}
	if IsGrantID(l.LicenseID) {
		d.GrantID = l.LicenseID
	}
	return newEvent(t, at, l.TenantID, d.LicenseID, l.ID, EventData{Lease: &d})
}

// EventOfLicense is a license's created, updated or deleted event.
func EventOfLicense(t EventType, l *License, at time.Time) Event {
	return newEvent(t, at, l.TenantID, l.ID, l.ID, EventData{License: LicenseOfEvent(l)})
}

// EventOfLicenseChange is the license.updated event of a change of l:
// l is the license after it; g the grant created, updated (as it is now)
// or deleted (as it was), nil for ChangeSettings and ChangePolicy.
func EventOfLicenseChange(c LicenseChange, l *License, g *Grant, at time.Time) Event {
	d := EventData{License: LicenseOfEvent(l), Change: c}
	if g != nil {
		d.Grant = &EventGrant{ID: g.ID, Feature: g.Feature, Version: g.Version, Seats: g.Seats,
			Overdraft: g.Overdraft, StartsAt: g.StartsAt, ExpiresAt: g.ExpiresAt}
	}
	return newEvent(EventLicenseUpdated, at, l.TenantID, l.ID, l.ID, d)
}

// LicenseOfEvent is l as an event shows it.
func LicenseOfEvent(l *License) *EventLicense {
	e := &EventLicense{ID: l.ID, Name: l.Name, Seats: l.Seats, Overdraft: l.Overdraft, Active: l.Active, ExpiresAt: l.ExpiresAt}
	if l.Policy != nil {
		e.PolicyRules = len(l.Policy.Rules)
	}
	return e
}

// EventOfAPIKey is an API key's revoked event.
func EventOfAPIKey(k *APIKey) Event {
	return newEvent(EventAPIKeyRevoked, k.RevokedAt, k.TenantID, "", k.ID,
		EventData{APIKey: &EventAPIKey{ID: k.ID, Name: k.Name, RevokedAt: k.RevokedAt}})
}

// NewEvent is an event the caller appends (AppendEvent), with a dedupe key.
func NewEvent(t EventType, at time.Time, tenantID, licenseID, subjectID, dedupe string, d EventData) Event {
	e := newEvent(t, at, tenantID, licenseID, subjectID, d)
	e.DedupeKey = dedupe
	return e
}

func newEvent(t EventType, at time.Time, tenantID, licenseID, subjectID string, d EventData) Event {
	data, _ := json.Marshal(d) // plain structs: cannot fail
	return Event{
		ID: NewID("evt_"), Type: t, At: at.UTC(), TenantID: tenantID, LicenseID: licenseID,
		SubjectID: subjectID, Data: data,
	}
}

// Endpoint is a receiver of a tenant's events.
type Endpoint struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	URL      string `json:"url"`
	// Types it is sent; empty: every type.
	Types []EventType `json:"types,omitempty"`
	// Secrets sign each request ("whsec_" + base64): the newest first; a
	// second one while the first is rotated in, until PreviousUntil.
	Secrets       []string  `json:"secrets"`
	PreviousUntil time.Time `json:"previous_until,omitzero"`
	Description   string    `json:"description,omitempty"`
	// Disabled: failing continuously (DisabledReason), or by its owner.
	Disabled       bool      `json:"disabled,omitempty"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// FailingSince: the first failed attempt of its current run of
	// failures (zero after a success).
	FailingSince time.Time `json:"failing_since,omitzero"`
}

// Wants reports whether the endpoint is sent events of type t.
func (e *Endpoint) Wants(t EventType) bool {
	if len(e.Types) == 0 {
		return true
	}
	for _, w := range e.Types {
		if w == t {
			return true
		}
	}
	return false
}

// ActiveSecrets are the secrets a request is signed with at now: the
// newest, and the previous one until PreviousUntil.
func (e *Endpoint) ActiveSecrets(now time.Time) []string {
	if len(e.Secrets) > 1 && now.Before(e.PreviousUntil) {
		return e.Secrets[:2]
	}
	return e.Secrets[:min(1, len(e.Secrets))]
}

// DeliveryState is where a delivery stands.
type DeliveryState string

const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	ID         string        `json:"id"` // dlv_…
	EndpointID string        `json:"endpoint_id"`
	TenantID   string        `json:"tenant_id"`
	Event      Event         `json:"event"`
	OrderKey   string        `json:"order_key"` // deliveries of one key go in Seq order: the license (or subject)
	Seq        int64         `json:"seq"`       // per (endpoint, order key), from 1
	State      DeliveryState `json:"state"`
	Attempts   int           `json:"attempts"`
	CreatedAt  time.Time     `json:"created_at"`
	NextAt     time.Time     `json:"next_at,omitzero"` // the next attempt (pending)
	// The last attempt's outcome.
	LastStatus  int           `json:"last_status,omitempty"` // HTTP status, 0: none (a network error)
	LastError   string        `json:"last_error,omitempty"`
	LastLatency time.Duration `json:"last_latency,omitempty"`
	LastAt      time.Time     `json:"last_at,omitzero"`
}

// Attempt is the outcome of one try of a delivery.
type Attempt struct {
	At      time.Time
	Status  int
	Error   string
	Latency time.Duration
	// Next: the delivery's state after it, and NextAt when still pending.
	Next   DeliveryState
	NextAt time.Time
}

// OrderKey is the key deliveries of an event keep their order by.
func (e *Event) OrderKey() string {
	if e.LicenseID != "" {
		return e.LicenseID
	}
	return e.SubjectID
}

// WebhookStore keeps the outbox, the endpoints and their deliveries.
// Every store writes the events of its changes itself (invariant 14):
// license created/updated/deleted (CreateLicense, UpdateLicense,
// DeleteLicense), lease.revoked (every revocation: Revoke, the leases a
// delete, a replacement or RevokeUnconfirmed ends), lease.expired (every
// expiry, with its last heartbeat), lease.borrowed (Acquire of a new
// borrowed lease) and apikey.revoked (RevokeAPIKey's first revocation),
// each in the same transaction as the change, none for a failed change.
type WebhookStore interface {
	// AppendEvent writes e unless e.DedupeKey is set and an event with
	// that key was written before: written is then false.
	AppendEvent(ctx context.Context, e Event) (written bool, err error)
	// EventsAfter lists the outbox's events with Seq > after, by Seq.
	EventsAfter(ctx context.Context, after int64, limit int) ([]Event, error)

	// CreateEndpoint stores ep as given (validated, ID and times set).
	// ErrTenantNotFound.
	CreateEndpoint(ctx context.Context, ep Endpoint) (Endpoint, error)
	// GetEndpoint: ErrEndpointNotFound if it is not the tenant's.
	GetEndpoint(ctx context.Context, tenantID, id string) (Endpoint, error)
	// ListEndpoints lists the tenant's endpoints, oldest first ("" every
	// tenant's, for the deliverer).
	ListEndpoints(ctx context.Context, tenantID string) ([]Endpoint, error)
	// UpdateEndpoint calls update on a copy and stores it. ErrEndpointNotFound.
	UpdateEndpoint(ctx context.Context, tenantID, id string, update func(*Endpoint) error) (Endpoint, error)
	// DeleteEndpoint removes it with its deliveries. ErrEndpointNotFound.
	DeleteEndpoint(ctx context.Context, tenantID, id string) error

	// FanOut turns up to limit outbox events not yet fanned out into one
	// pending delivery per enabled endpoint of the event's tenant that
	// wants its type (NextAt = now), in one transaction, and returns how
	// many events it took. Run by one deliverer at a time; two at once
	// write each event's deliveries once.
	FanOut(ctx context.Context, now time.Time, limit int) (int, error)
	// DueDeliveries returns up to limit pending deliveries due at now,
	// each the first pending one (lowest Seq) of its (endpoint, order
	// key): a later one waits behind an earlier one still retrying.
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// RecordAttempt stores an attempt's outcome on a pending delivery
	// (Attempts + 1). ErrDeliveryNotFound if it is gone or not pending.
	RecordAttempt(ctx context.Context, id string, a Attempt) (Delivery, error)
	// ListDeliveries lists an endpoint's deliveries, newest first.
	ListDeliveries(ctx context.Context, tenantID, endpointID string, p Page) ([]Delivery, string, error)
	// GetDelivery: ErrDeliveryNotFound unless it is the tenant's.
	GetDelivery(ctx context.Context, tenantID, id string) (Delivery, error)
	// ReplayDelivery makes a delivery pending again, due at now (its
	// event and sequence kept: a receiver sees the same id).
	ReplayDelivery(ctx context.Context, tenantID, id string, now time.Time) (Delivery, error)
}

// ErrEndpointNotFound: no such webhook endpoint of the tenant.
var ErrEndpointNotFound = Errorf(ENOTFOUND, ReasonEndpointNotFound, "webhook endpoint not found")

// ErrDeliveryNotFound: no such webhook delivery of the tenant (or, to
// RecordAttempt, none pending).
var ErrDeliveryNotFound = Errorf(ENOTFOUND, ReasonDeliveryNotFound, "webhook delivery not found")
