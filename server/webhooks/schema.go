package webhooks

import (
	"strings"

	"github.com/seatd/seatd/server"
)

// The payload's stable JSON schema, one per event type, as the OpenAPI
// documents publish it (server/gateway: definitions of the Swagger 2.0
// document, components and webhooks of the 3.1 one). Fields are only ever
// added, and every object lists its properties closed
// (additionalProperties false), so that a field the code emits and this
// schema does not name fails TestPayloadsMatchTheirSchema.

// SchemaName is the definition's name of the payload of events of type t:
// WebhookEvent_license_created, ...
func SchemaName(t server.EventType) string {
	return "WebhookEvent_" + strings.NewReplacer(".", "_").Replace(string(t))
}

// payloadData is what the data object of each type carries: the required
// members, then the optional ones.
var payloadData = map[server.EventType]struct {
	summary            string
	required, optional []string
}{
	server.EventLicenseCreated:   {"A license was created.", []string{"license"}, nil},
	server.EventLicenseUpdated:   {"A license was changed (the license as it is now): change says what changed, grant names the feature grant of a grant.* change (as created or updated, or as it was when deleted).", []string{"license"}, []string{"change", "grant"}},
	server.EventLicenseDeleted:   {"A license was deleted (as it was; its live leases were revoked, each a lease.revoked).", []string{"license"}, nil},
	server.EventLicenseExpiring:  {"A license, or one of its grants (license.grant_id, license.feature), expires within a threshold of --webhook-expiring-before: once per threshold and expiry. license.expires_at is the expiry meant.", []string{"license"}, nil},
	server.EventLicenseExhausted: {"An acquisition was refused for want of a seat: at most one per pool per --webhook-signal-window.", []string{"license", "seats"}, nil},
	server.EventLicensePeak:      {"A grant brought a pool's use to --webhook-peak-share of its seat limit or more (seats.share): at most one per pool per window.", []string{"license", "seats"}, nil},
	server.EventLeaseRevoked:     {"A lease was revoked (by an admin, its license's deletion, a replacement).", []string{"lease"}, nil},
	server.EventLeaseExpired:     {"A lease's deadline passed without a heartbeat (a zombie cleaned): lease.last_heartbeat_at is its last.", []string{"lease"}, nil},
	server.EventLeaseBorrowed:    {"A lease was borrowed (checked out for offline use until lease.expires_at).", []string{"lease"}, nil},
	server.EventAPIKeyRevoked:    {"An API key was revoked (never its secret).", []string{"api_key"}, nil},
	server.EventEndpointDisabled: {"A webhook endpoint failing continuously for --webhook-disable-after was disabled (endpoint.reason).", []string{"endpoint"}, nil},
}

var dataRefs = map[string]string{
	"license": "WebhookLicense", "lease": "WebhookLease", "api_key": "WebhookAPIKey",
	"seats": "WebhookSeats", "endpoint": "WebhookEndpointRef", "grant": "WebhookGrant",
}

// changes are the values of a license.updated event's data.change.
var changes = []string{string(server.ChangeSettings), string(server.ChangeGrantCreated),
	string(server.ChangeGrantUpdated), string(server.ChangeGrantDeleted), string(server.ChangePolicy)}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "format": "int64", "description": desc}
}
func when(desc string) map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "description": desc + " (RFC 3339, UTC, to the microsecond)"}
}

func object(desc string, required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "description": desc, "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// PayloadSchemas are the payload definitions in Swagger 2.0 form (JSON
// Schema with $ref to #/definitions/...): one per event type
// (SchemaName) and the resources they name.
func PayloadSchemas() map[string]any {
	states := []string{string(server.LeaseActive), string(server.LeaseReleased), string(server.LeaseExpired), string(server.LeaseRevoked)}
	defs := map[string]any{
		"WebhookLicense": object("A license as a webhook event shows it.", []string{"id", "seats", "active"}, map[string]any{
			"id":           str("The license's id."),
			"name":         str("Its name; absent when empty."),
			"seats":        integer("Its seats."),
			"overdraft":    integer("Seats it may go over; absent when 0."),
			"active":       map[string]any{"type": "boolean", "description": "Whether it grants seats."},
			"expires_at":   when("Its expiry (license.expiring: the license's or the grant's); absent when none"),
			"grant_id":     str("license.expiring of a feature grant: the grant's id."),
			"feature":      str("license.expiring of a feature grant: its feature."),
			"policy_rules": integer("The rules of its site policy; absent when it has none."),
		}),
		"WebhookGrant": object("A feature grant as a license.updated event shows it.", []string{"id", "feature", "seats"}, map[string]any{
			"id":         str("The grant's id."),
			"feature":    str("Its feature."),
			"version":    str("The highest version it covers; absent when it covers every version."),
			"seats":      integer("Its seats."),
			"overdraft":  integer("Seats it may go over; absent when 0."),
			"starts_at":  when("When it starts granting; absent when at once"),
			"expires_at": when("Its expiry; absent when none"),
		}),
		"WebhookLease": object("A lease as a webhook event shows it.", []string{"id", "license_id", "state", "acquired_at", "last_heartbeat_at", "expires_at"}, map[string]any{
			"id":                str("The lease's id."),
			"license_id":        str("Its license (never a grant's id)."),
			"grant_id":          str("The feature grant it holds a seat of; absent for the license's own seats."),
			"feature":           str("The grant's feature; absent when none."),
			"user":              str("The client's user; absent when empty."),
			"hostname":          str("The client's host name; absent when empty."),
			"state":             map[string]any{"type": "string", "enum": states, "description": "active (lease.borrowed), revoked or expired."},
			"borrowed":          map[string]any{"type": "boolean", "description": "true for a borrowed lease; absent otherwise."},
			"acquired_at":       when("When it was acquired"),
			"last_heartbeat_at": when("Its last heartbeat (lease.expired: the zombie's last)"),
			"expires_at":        when("Its deadline"),
			"ended_at":          when("When it ended (revoked, expired); absent while active"),
		}),
		"WebhookAPIKey": object("An API key as a webhook event shows it (never its secret).", []string{"id"}, map[string]any{
			"id":         str("The key's id."),
			"name":       str("Its name; absent when empty."),
			"revoked_at": when("When it was revoked"),
		}),
		"WebhookSeats": object("A pool's use: license.exhausted, license.peak.", []string{"pool_id", "limit", "in_use"}, map[string]any{
			"pool_id": str("The license's id, or a feature grant's."),
			"limit":   integer("Its seat limit (seats plus overdraft)."),
			"in_use":  integer("Seats in use."),
			"share":   integer("license.peak: the threshold crossed, in percent."),
		}),
		"WebhookEndpointRef": object("A webhook endpoint: webhook_endpoint.disabled.", []string{"id", "url"}, map[string]any{
			"id":     str("The endpoint's id."),
			"url":    str("Its URL."),
			"reason": str("Why it was disabled."),
		}),
	}
	for _, t := range server.EventTypes {
		pd := payloadData[t]
		data := map[string]any{}
		for _, name := range append(append([]string(nil), pd.required...), pd.optional...) {
			if name == "change" {
				data[name] = map[string]any{"type": "string", "enum": changes, "description": "What changed: the license's own settings, one of its feature grants, or its site policy."}
				continue
			}
			data[name] = map[string]any{"$ref": "#/definitions/" + dataRefs[name]}
		}
		defs[SchemaName(t)] = object("The body of a "+string(t)+" delivery (signed as Standard Webhooks says). "+pd.summary,
			[]string{"id", "type", "timestamp", "tenant_id", "sequence", "data"}, map[string]any{
				"id":        map[string]any{"type": "string", "pattern": "^evt_[0-9a-f]{24}$", "description": "The event's id, also the webhook-id header: the same in every delivery of the event (drop duplicates by it)."},
				"type":      map[string]any{"type": "string", "enum": []string{string(t)}, "description": "The event's type."},
				"timestamp": when("When the change happened"),
				"tenant_id": str("The tenant."),
				"sequence":  map[string]any{"type": "integer", "format": "int64", "minimum": 1, "description": "Numbers the endpoint's deliveries of one license (or, for an event of no license, of its subject) from 1: a gap is an earlier delivery that failed, a repeat one sent again."},
				"data":      object("The resources the event names.", pd.required, data),
			})
	}
	return defs
}
