package server

// RecordKind names one kind of history that retention prunes on its own
// schedule. Everything else (tenants, keys, licenses, signing keys, active
// leases) is kept until deleted through the API.
type RecordKind string

const (
	// RecordLeases: an ended lease with its usage event (the usage
	// report's and ListLeases' history), by the lease's EndedAt.
	RecordLeases RecordKind = "leases"
	// RecordCleanupEvents: the zombie report's cleanup events, by CleanedAt.
	RecordCleanupEvents RecordKind = "cleanup_events"
	// RecordSeatEvents: the usage report's denials and waits, by At.
	RecordSeatEvents RecordKind = "seat_events"
	// RecordAudit: audit entries, by At.
	RecordAudit RecordKind = "audit"
	// RecordReturnedCertificates: the entries of the signed list of
	// returned borrowed certificates, by the certificate's exp (kept a
	// while after it for products whose clocks run late).
	RecordReturnedCertificates RecordKind = "returned_certificates"
	// RecordWebhookDeliveries: webhook deliveries (the delivery log) that
	// are delivered or failed, by the later of when they were made and
	// their last attempt; a pending one (still retrying) is never removed.
	RecordWebhookDeliveries RecordKind = "webhook_deliveries"
	// RecordWebhookEvents: outbox events, by At, once fanned out and with
	// no delivery left (RecordWebhookDeliveries runs first); an event not
	// yet fanned out is never removed. Its dedupe key goes with it.
	RecordWebhookEvents RecordKind = "webhook_events"
)

// RecordKinds are every kind, in the order a retention pass prunes them.
var RecordKinds = []RecordKind{
	RecordLeases, RecordCleanupEvents, RecordSeatEvents, RecordAudit, RecordReturnedCertificates,
	RecordWebhookDeliveries, RecordWebhookEvents,
}

// Valid reports whether k is one of RecordKinds.
func (k RecordKind) Valid() bool {
	for _, v := range RecordKinds {
		if k == v {
			return true
		}
	}
	return false
}

// ErrUnknownRecordKind is what a store answers for a kind it does not know.
func ErrUnknownRecordKind(k RecordKind) error {
	return Invalid("kind", "unknown record kind %q", string(k))
}
