// Package client is the Go client of seatd: take a seat, keep it alive, give
// it back, and learn promptly when it is gone.
//
//	c, err := client.Dial("seatd.example.com:7070")
//	...
//	defer c.Close()
//	fp, err := client.MachineFingerprint("com.example.cad") // this machine, for this app
//	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: fp})
//	if errors.Is(err, client.ErrNoSeat) { ... no seat for us now: retry later ... }
//	defer lease.Release(context.Background())
//	select {
//	case <-lease.Lost(): // expired, revoked, or taken over: stop using the product
//		log.Print(lease.Err(), client.Reason(lease.Err()))
//	case <-done:
//	}
//
// # Keeping the seat
//
// A Lease heartbeats itself in the background (Options.AutoHeartbeat, on by
// default): it keeps one HeartbeatStream open and pings every
// heartbeat_interval the server suggests, falls back to unary Heartbeat calls
// when the server has no stream (UNIMPLEMENTED) or streams keep failing, and
// reconnects with exponential backoff and jitter when the server says
// RECONNECT (rolling restart), answers UNAVAILABLE, or the stream breaks. While
// the lease's deadline has not passed, such failures are retried, never
// reported. Lost is closed only when the lease is gone for sure: the server
// says it expired, was revoked, released or taken over by another token, or
// the deadline passed without a successful heartbeat (typically a laptop that
// slept). With Options.ReacquireOnExpiry an expired lease is acquired again
// with the same AcquireOptions and the new id and token are swapped in; Lost
// closes only if that fails. A server limit that passes (RESOURCE_EXHAUSTED
// RATE_LIMITED or TOO_MANY_STREAMS, unlike SEATS_EXHAUSTED) is retried too,
// waiting at least as long as its RetryInfo asks. Acquire itself is one
// call: its caller decides whether to retry.
//
// WaitForSeat queues for a seat (FIFO per license) and reports the position;
// when its server shuts down it waits again elsewhere and keeps its place,
// by sending the ticket of its last QueuePosition as queue_ticket. Against a
// server without the queue it polls AcquireSeat with backoff.
//
// # Trusting the server
//
// An answer that grants or extends a seat carries a lease certificate when
// the request carried a nonce, and always for a borrow: a JWS (EdDSA) signed
// by the tenant's key, naming the lease, its fingerprint and license, its
// deadline (exp) and the nonce of the request it answers. Options.SigningKeys,
// from ParseSigningKeys of the tenant's JWKS embedded in the product at
// build time, makes the client send a fresh nonce with every request and
// check each certificate; an answer that fails (a missing certificate
// included) is a lost lease (ErrBadCertificate, ReasonBadCertificate) and
// its seat is given back. Without SigningKeys only a borrow sends a nonce,
// so seatd spends no signatures on a client that would not check them.
// Borrow takes a seat for offline use; VerifyOffline checks its stored
// certificate at start-up without a network.
//
// Against a seatd in locked mode (a vendor-signed license file),
// Options.VendorKeys, from ParseVendorKeys of the vendor's public key
// embedded in the product, checks every certificate through the chain
// vendor → license file → site key → certificate instead: the client
// fetches the file (FetchLicenseFile), verifies it with the vendor's key,
// and checks that each certificate is signed by the site key it names,
// under its serial, for a license it grants (LicenseFile.Verify; each
// failed link a named error, ErrWrongSiteKey ...). Lease.LicenseFile is
// the file to store with a borrowed certificate; VerifyChainOffline
// checks both at start-up.
//
// A product sold in modules asks for a seat of one with
// AcquireOptions.Feature (and Version, the version it is): seatd takes it
// from one of the license's feature grants covering that version, the
// one that expires first, instead of the license's base seats. The Lease
// names its Feature, Version, GrantID and GrantExpiresAt, and its
// certificates carry them and the grant's version: CheckHolder refuses a
// certificate of another feature, or of a grant that does not cover the
// version asked for. An answer of another feature than the one asked (a
// seatd without features hands out a base seat) is refused as a lost
// lease, with or without SigningKeys.
//
// # Retries in other languages
//
// ServiceConfig is a standard gRPC service config (the same text is in
// service_config.json next to this file). It makes the gRPC library itself
// retry UNAVAILABLE on AcquireSeat, ReleaseSeat and Heartbeat, which is what
// lets a rolling restart of seatd go unnoticed. Dial installs it; with New,
// pass grpc.WithDefaultServiceConfig(client.ServiceConfig) yourself. Clients
// generated from proto/seatd/v1 in other languages use the same JSON:
//
//   - Python: grpc.secure_channel(target, creds, options=[("grpc.service_config", json_text), ("grpc.enable_retries", 1)])
//   - Java: ManagedChannelBuilder.forTarget(target).defaultServiceConfig(new Gson().fromJson(jsonText, Map.class)).enableRetry()
//   - C++: grpc::ChannelArguments args; args.SetServiceConfigJSON(json_text); grpc::CreateCustomChannel(target, creds, args)
//   - Node (@grpc/grpc-js): new SeatServiceClient(target, creds, {"grpc.service_config": jsonText})
//   - C# (Grpc.Net.Client): build the same MethodConfig/RetryPolicy in GrpcChannelOptions.ServiceConfig
//     (it takes objects, not JSON; the values are the same).
//
// Those libraries do not heartbeat for you: call HeartbeatStream (or
// Heartbeat) every heartbeat_interval from the last answer, reopen the stream
// on HEARTBEAT_SIGNAL_RECONNECT, wait again with queue_ticket set to the last
// QueuePosition.ticket when a WaitForSeat stream ends with UNAVAILABLE, and treat the ErrorInfo reasons LEASE_EXPIRED,
// LEASE_REVOKED, LEASE_RELEASED, LEASE_NOT_FOUND and LEASE_TOKEN_INVALID as
// "the seat is gone".
package client
