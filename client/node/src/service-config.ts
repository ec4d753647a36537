// The gRPC service config of client/service_config.json (the Go client's
// ServiceConfig): grpc-js retries UNAVAILABLE on the calls that are safe to
// repeat. A test keeps the two equal.
export const serviceConfig = JSON.stringify({
  methodConfig: [{
    name: [
      { service: "seatd.v1.SeatService", method: "AcquireSeat" },
      { service: "seatd.v1.SeatService", method: "ReleaseSeat" },
      { service: "seatd.v1.HeartbeatService", method: "Heartbeat" },
    ],
    retryPolicy: {
      maxAttempts: 5,
      initialBackoff: "0.1s",
      maxBackoff: "2s",
      backoffMultiplier: 2,
      retryableStatusCodes: ["UNAVAILABLE"],
    },
  }],
});
