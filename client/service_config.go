package client

// ServiceConfig retries UNAVAILABLE on the calls that are safe to repeat
// (heartbeat, release, and acquire, which dedupes by fingerprint and
// idempotency key). Streams are left out: the Lease reconnects them itself.
// service_config.json holds the same text for other languages (see the
// package documentation); a test keeps the two equal.
const ServiceConfig = `{
  "methodConfig": [{
    "name": [
      {"service": "seatd.v1.SeatService", "method": "AcquireSeat"},
      {"service": "seatd.v1.SeatService", "method": "ReleaseSeat"},
      {"service": "seatd.v1.HeartbeatService", "method": "Heartbeat"}
    ],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.1s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`
