"""The seatd client: leases kept alive in the background, waits, admin calls.

Same behaviour as the Go client (github.com/seatd/seatd/client): a lease
heartbeats over HeartbeatStream at the server's heartbeat_interval, falls back
to unary heartbeats when streams keep failing (or the server has none),
reconnects with backoff, notices a deadline passed while the machine slept,
and reports a lost lease through lease.lost (a threading.Event).
"""

import datetime
import json
import logging
import queue
import random
import secrets
import threading
import time

import grpc
from google.protobuf import duration_pb2, json_format

from seatd import errors
from seatd.certificate import SigningKeys, holder_of, new_nonce
from seatd.licensefile import VendorKeys, _FileChain
from seatd.v1 import admin_service_pb2, admin_service_pb2_grpc, heartbeat_service_pb2, \
    heartbeat_service_pb2_grpc, resources_pb2, seat_service_pb2, seat_service_pb2_grpc

log = logging.getLogger("seatd")
log.addHandler(logging.NullHandler())  # the application decides what to show

# Retries UNAVAILABLE on the calls that are safe to repeat; the same text as
# client/service_config.json of the Go client (a test keeps them equal).
SERVICE_CONFIG = """{
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
}"""

_SIG = heartbeat_service_pb2


class Timing:
    """Clock and delays of the background work (seconds); tests shrink them."""

    def __init__(self, **kw):
        self.now = time.time          # wall clock: keeps running while the machine sleeps
        self.clock_check = 1.0        # how often a waiting keeper looks at the wall clock
        self.backoff_base, self.backoff_max = 0.25, 10.0
        self.reconnect_jitter = 1.0   # spread of reconnects after a RECONNECT signal
        self.min_interval = 1.0
        self.last_chance = 5.0        # bound of the one heartbeat tried past the deadline
        self.call_timeout = 10.0
        self.stream_failures = 3      # failed streams in a row before unary heartbeats ...
        self.unary_before_stream = 10  # ... for this many beats
        self.acquire_attempts = 5     # tries of one acquisition (same idempotency key)
        self.__dict__.update(kw)

    def backoff(self, n, limit):
        """Exponential up to limit with equal jitter, for retry number n (1, 2, ...)."""
        d = min(self.backoff_base * 2 ** (n - 1), limit)
        return d / 2 + random.uniform(0, d / 2)


def _seconds(d):
    return d.seconds + d.nanos / 1e9


def _duration(seconds):
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(seconds * 1e9))
    return d


def _call(fn, request, timeout=None, metadata=None):
    try:
        return fn(request, timeout=timeout, metadata=metadata)
    except grpc.RpcError as e:
        raise errors.from_rpc_error(e) from None


def _credentials(tls):
    if tls is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls, (bytes, str)):  # a PEM CA bundle (or a path to one)
        if isinstance(tls, str):
            with open(tls, "rb") as f:
                tls = f.read()
        return grpc.ssl_channel_credentials(root_certificates=tls)
    return tls  # grpc.ChannelCredentials (e.g. with a client certificate)


def _channel(address, tls, options):
    """A channel to address ("host:port"), or to several instances (a list
    of "ip:port", balanced round-robin so that a stopping one is skipped)."""
    opts = [("grpc.service_config", SERVICE_CONFIG), ("grpc.enable_retries", 1)] + list(options)
    if not isinstance(address, str):
        address = "ipv4:" + ",".join(address)
        opts.append(("grpc.lb_policy_name", "round_robin"))
    if tls:
        return grpc.secure_channel(address, _credentials(tls), options=opts)
    return grpc.insecure_channel(address, options=opts)


class _Connected:
    """A channel of our own (closed by close()) or the caller's (left open)."""

    def __init__(self, address, tls, options, channel):
        self._owned = channel is None
        self.channel = channel if channel is not None else _channel(address, tls, options)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._owned:
            self.channel.close()


class Client(_Connected):
    """Talks to one seatd (or several instances).

    tls: False (plaintext), True (system roots), PEM bytes or a path of the
    CA bundle, or grpc.ChannelCredentials. channel: an existing grpc.Channel
    to use instead (not closed by close()).

    signing_keys: the tenant's JWKS (bytes, str, dict or a SigningKeys),
    embedded in the product. With it every answer that grants or extends a
    seat must carry a valid lease certificate (signed by a key of the set,
    our nonce, this lease, our own license key and identity: Claims.check_holder,
    exp = the deadline told); one
    that does not is a lost lease: acquire raises BadCertificate (and gives
    the seat back), a kept lease sets lost with it. With signing_keys every
    request carries a fresh nonce, which asks seatd for a certificate;
    without, only a borrow does, so seatd signs nothing else for this client
    (a signature costs it about a third of its heartbeat rate) and
    lease.certificate is "" but for a borrowed lease.

    vendor_keys: the vendor's public keys (vendor.pub: bytes, str, dict or
    a VendorKeys), embedded in a product sold for air-gapped sites. With
    it every certificate is checked as with signing_keys, but through the
    chain of a seatd in locked mode, from the vendor's key: the license
    file in force (fetched from seatd, fetch_license_file, when the client
    has none or a certificate names another serial), signed by the vendor
    and before its not_after; the certificate signed by the site key the
    file names, naming its serial and a license (and feature) it grants.
    A failure is a lost lease as with signing_keys, raised as the
    BadCertificate of its link (WrongSiteKey, WrongLicenseFile,
    LicenseNotInFile, LicenseFileInvalid, LicenseFileExpired).
    lease.license_file is the file (its JWS) a lease's certificate chained
    to. With both set, a certificate must pass both.
    """

    def __init__(self, address=None, tls=False, *, options=(), channel=None, auto_heartbeat=True,
                 reacquire_on_expiry=False, timing=None, signing_keys=None, vendor_keys=None):
        super().__init__(address, tls, options, channel)
        if signing_keys is not None and not isinstance(signing_keys, SigningKeys):
            signing_keys = SigningKeys(signing_keys)
        self.signing_keys = signing_keys
        if vendor_keys is not None and not isinstance(vendor_keys, VendorKeys):
            vendor_keys = VendorKeys(vendor_keys)
        self.vendor_keys = vendor_keys
        self._chain = _FileChain(vendor_keys, self.fetch_license_file) if vendor_keys is not None else None
        self._seats = seat_service_pb2_grpc.SeatServiceStub(self.channel)
        self._hb = heartbeat_service_pb2_grpc.HeartbeatServiceStub(self.channel)
        self.auto_heartbeat = auto_heartbeat
        self.reacquire_on_expiry = reacquire_on_expiry
        self.t = timing or Timing()
        self._mu = threading.Lock()
        self._keepers = set()
        self._closed = False

    def close(self):
        """Stops every lease's heartbeats (without releasing the seats) and
        closes the channel if this client made it."""
        with self._mu:
            self._closed = True
            running = list(self._keepers)
        for k in running:
            k.stop()
        super().close()

    def acquire(self, license_key, fingerprint, *, user="", hostname="", metadata=None,
                idempotency_key=None, timeout=None, feature="", version=""):
        """Takes a seat, or raises (SeatsExhausted when none is free; under the
        license's site policy, another NoSeat for a cap or reserved seats, or
        NotAllowed when it refuses the client). Every try of this one
        acquisition sends the same idempotency key, so a retry after a lost
        reply gets the seat the first try took, never a second one.

        feature takes the seat from the license's grants of that feature (a
        module of the product) instead of its base pool; version is the
        version of the feature this program is (dotted numbers, "2025.1"),
        which the grant must cover. Raises FeatureNotLicensed or
        VersionNotLicensed (its subclass) when no grant does, GrantNotStarted
        when none has started yet, SeatsExhausted when all are full. The
        lease says which grant it holds (grant_id, grant_expires_at).

        fingerprint identifies the client; seatd.machine_fingerprint(app)
        is a stable one per machine and application, the same in every
        seatd client."""
        opts = _options(license_key, fingerprint, user, hostname, metadata, feature, version)
        req = seat_service_pb2.AcquireSeatRequest(idempotency_key=idempotency_key or _new_key(), nonce=self._nonce(),
                                                  **opts)
        sent = self.t.now()
        return self._hold(opts, self._acquire(req, timeout), sent, req.nonce)

    lease = acquire  # `with client.lease(key, fingerprint) as lease:` releases on exit

    def borrow(self, license_key, fingerprint, duration, *, user="", hostname="", metadata=None,
               idempotency_key=None, timeout=None, feature="", version=""):
        """Borrows a seat for offline use for duration seconds (at most the
        license's max_borrow_duration). The Lease needs no heartbeats and is
        not kept; it holds its seat until lease.expires_at or an early
        return (lease.release(), or release_seat(id, token) after a
        restart). Store lease.certificate with the product: verify_offline
        checks it later without a network. The request carries a nonce,
        with signing_keys or without, so the certificate (seatd signs one for
        every borrow) repeats it. An answer without a certificate, or not
        borrowed (a server without borrowing), raises BadCertificate and the
        seat is given back; with signing_keys the certificate is verified as
        for acquire. feature and version: as for acquire (the grant's own
        borrowing limits apply)."""
        if duration <= 0:
            raise ValueError("borrow duration must be positive")
        opts = _options(license_key, fingerprint, user, hostname, metadata, feature, version)
        req = seat_service_pb2.AcquireSeatRequest(idempotency_key=idempotency_key or _new_key(),
                                                  nonce=self._nonce(borrow=True),
                                                  borrow_duration=_duration(duration), **opts)
        sent = self.t.now()
        return self._hold(opts, self._acquire(req, timeout), sent, req.nonce, borrowed=True)

    def release_seat(self, lease_id, lease_token, timeout=None):
        """Gives back a seat known by its id and token (after a restart).
        Releasing again is fine; raises LeaseExpired or LeaseRevoked when the
        lease ended otherwise, SeatdError LEASE_BORROWED for a live borrowed
        lease of a license that does not allow_early_return (its certificate
        stays valid offline); one that does lists the returned certificate
        (fetch_returned_certificates)."""
        _call(self._seats.ReleaseSeat, seat_service_pb2.ReleaseSeatRequest(lease_id=lease_id, lease_token=lease_token),
              timeout=timeout or self.t.call_timeout)

    def fetch_signing_keys(self, tenant_id="", timeout=None):
        """The tenant's JWKS (JSON bytes) from GetSigningKeys, to embed in a
        product at build time. Fetching it at run time from the server the
        product checks proves nothing (a fake server answers its own keys)."""
        resp = _call(self._seats.GetSigningKeys, seat_service_pb2.GetSigningKeysRequest(tenant_id=tenant_id),
                     timeout=timeout or self.t.call_timeout)
        keys = [json_format.MessageToDict(k, preserving_proto_field_name=True) for k in resp.keys]
        return json.dumps({"keys": keys}, indent=2).encode()

    def fetch_returned_certificates(self, tenant_id="", timeout=None):
        """The tenant's signed list of returned certificates (a JWS, str),
        from GetReturnedCertificates. Verify it (SigningKeys.verify_returned,
        with a max_age) and keep the newer of it and the list kept
        (certificate.newer) before relying on it."""
        resp = _call(self._seats.GetReturnedCertificates,
                     seat_service_pb2.GetReturnedCertificatesRequest(tenant_id=tenant_id),
                     timeout=timeout or self.t.call_timeout)
        return resp.returned_certificates

    def fetch_license_file(self, timeout=None):
        """The license file in force (locked mode) as its JWS (str), from
        GetSignedLicenseFile: VendorKeys.verify_license_file checks it.
        Unlike a JWKS it may be fetched from the server it is to check: its
        trust comes from the vendor's signature, not from who answers. A
        seatd without a license file raises SeatdError
        LICENSE_FILE_NOT_CONFIGURED."""
        resp = _call(self._seats.GetSignedLicenseFile, seat_service_pb2.GetSignedLicenseFileRequest(),
                     timeout=timeout or self.t.call_timeout)
        return resp.license_file

    def _verifies(self):
        return self.signing_keys is not None or self._chain is not None

    def _verify_cert(self, cert, **expect):
        """Checks an answer's certificate with signing_keys and through the
        chain of vendor_keys, those set (expect: as SigningKeys.check);
        returns the JWS of the license file it chained to ("" without
        vendor_keys). Raises BadCertificate."""
        if self.signing_keys is not None:
            self.signing_keys.check(cert, **expect)
        if self._chain is None:
            return ""
        return self._chain.check(cert, **expect).token

    def _nonce(self, borrow=False):
        """The nonce of a new request: a fresh one when this client checks
        certificates (signing_keys) or the request borrows (a borrow always
        gets a certificate, which then repeats it), else "". seatd signs a
        certificate only for a request with a nonce, or a borrow: a client
        that does not check them should not cost it the signatures."""
        return new_nonce() if self._verifies() or borrow else ""

    def _check(self, resp, nonce, opts, borrowed):
        """Raises BadCertificate if a grant's certificate does not verify
        (or, for a borrow, is missing or not borrowed), SeatdError
        (UNIMPLEMENTED) if the seat is not of the feature asked for.
        Returns the license file it chained to (vendor_keys), or ""."""
        pl = resp.lease
        if opts["feature"] and pl.feature != opts["feature"]:
            # A seatd from before features ignores the field and grants a
            # seat of the base pool, which must not unlock the feature.
            raise errors.local_error(errors.SeatdError, "", "seatd granted a seat of %r, not of feature %r "
                                     "(a seatd without features? upgrade it)" % (pl.feature, opts["feature"]),
                                     code=grpc.StatusCode.UNIMPLEMENTED)
        if borrowed and not pl.borrowed:
            raise errors.BadCertificate("seatd granted a lease that is not borrowed (a server without borrowing?)")
        if borrowed and not resp.lease_certificate:
            raise errors.BadCertificate("none in seatd's answer to a borrow")
        if not self._verifies():
            return ""
        deadline = pl.expires_at.ToNanoseconds() / 1e9 if pl.HasField("expires_at") else None
        return self._verify_cert(resp.lease_certificate, nonce=nonce, lease_id=pl.id, license_id=pl.license_id,
                                 holder=holder_of(opts), deadline=deadline, grant_id=pl.grant_id, borrowed=borrowed,
                                 now=self.t.now())

    def _give_back(self, lease_id, token):
        """Releases a seat we refuse, as far as the server is real and reachable."""
        try:
            self.release_seat(lease_id, token)
        except errors.SeatdError as e:
            log.debug("could not give back refused seat %s: %s", lease_id, e)
    def _acquire(self, req, timeout, deadline=None):
        end = self.t.now() + timeout if timeout else deadline
        for n in range(1, 1 << 30):
            left = None if end is None else max(end - self.t.now(), 0.001)
            try:
                return _call(self._seats.AcquireSeat, req, timeout=left if left else self.t.call_timeout * 3)
            except errors.SeatdError as e:
                if not errors.retryable(e) or n >= self.t.acquire_attempts:
                    raise
                wait = max(self.t.backoff(n, self.t.backoff_max), e.retry_delay or 0)
                if end is not None and self.t.now() + wait > end:
                    raise
                log.debug("acquire failed (%s); retrying with the same idempotency key", e)
                time.sleep(wait)

    def _hold(self, opts, resp, sent, nonce, borrowed=False):
        try:
            file = self._check(resp, nonce, opts, borrowed)
        except errors.SeatdError:  # not the seat asked for, or not seatd's
            self._give_back(resp.lease.id, resp.lease_token)
            raise
        lease = Lease(self, opts, resp, sent, borrowed, file)
        if self.auto_heartbeat and not borrowed:
            with self._mu:
                if not self._closed:
                    lease._keeper = _Keeper(lease)
                    self._keepers.add(lease._keeper)
            if lease._keeper:
                lease._keeper.start()
        return lease

    def wait_for_seat(self, license_key, fingerprint, *, user="", hostname="", metadata=None,
                      on_position=None, timeout=None, feature="", version=""):
        """Queues for a seat (FIFO) and returns the Lease once granted.
        feature and version: as for acquire; the queue is then the
        feature's, and a feature or version not licensed raises at once.

        on_position(position, queue_length) hears the place on joining and on
        every change. If the stream drops it joins again with the queue
        ticket of its last position (keeping its place while the server holds
        it). Against a server without the queue it polls acquire while no
        seat is free for it (NoSeat: none free, or the site policy's cap or
        reserved seats keep them from it); a refusal no wait ends (NotAllowed:
        the policy excludes the client) raises. Raises TimeoutError when
        timeout (seconds) passes first.
        """
        opts = _options(license_key, fingerprint, user, hostname, metadata, feature, version)
        end = None if timeout is None else self.t.now() + timeout
        key, nonce, ticket, failures = _new_key(), self._nonce(), "", 0  # one acquisition, however many streams
        report = on_position or (lambda position, length: None)
        while True:
            left = None if end is None else end - self.t.now()
            if left is not None and left <= 0:
                raise TimeoutError("no seat within %ss" % timeout)
            req = seat_service_pb2.WaitForSeatRequest(idempotency_key=key, queue_ticket=ticket, nonce=nonce, **opts)
            heard, granted, sent = False, None, None
            call = self._seats.WaitForSeat(req, timeout=left)
            try:
                for resp in call:
                    heard = True
                    if resp.HasField("granted"):
                        granted, sent = resp.granted, self.t.now()
                        break
                    ticket = resp.position.ticket
                    report(resp.position.position, resp.position.queue_length)
                err = errors.SeatdError(grpc.StatusCode.UNAVAILABLE, "wait stream closed by seatd")
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e)
            finally:
                call.cancel()
            if granted is not None:
                lease = self._hold(opts, granted, sent, nonce)
                try:
                    # The server holds a waiter's grant only until its first
                    # heartbeat (--wait-hold): confirm it now.
                    lease.heartbeat()
                    return lease
                except errors.BadCertificate:
                    if lease._keeper is not None:
                        lease._keeper.stop()
                    self._give_back(lease.id, lease.token)
                    raise  # not seatd's answer: no use waiting again
                except errors.LeaseLost:
                    lease.release()
                    ticket = ""  # the grant used up the place: queue again
                    continue
            if err.code == grpc.StatusCode.DEADLINE_EXCEEDED and end is not None and self.t.now() >= end:
                raise TimeoutError("no seat within %ss" % timeout)
            if err.code == grpc.StatusCode.UNIMPLEMENTED:
                return self._poll_for_seat(opts, report, end)
            if not errors.retryable(err):
                raise err
            failures = 1 if heard else failures + 1
            time.sleep(self.t.backoff(failures, self.t.backoff_max))

    def _poll_for_seat(self, opts, report, end):
        for n in range(1, 1 << 30):
            try:
                req = seat_service_pb2.AcquireSeatRequest(idempotency_key=_new_key(), nonce=self._nonce(), **opts)
                return self._hold(opts, self._acquire(req, None, end), self.t.now(), req.nonce)
            except errors.NoSeat:  # none free, or the site policy's cap or reserved seats: they pass
                report(0, 0)
            wait = self.t.backoff(n, self.t.backoff_max)
            if end is not None and self.t.now() + wait > end:
                raise TimeoutError("no seat in time")
            time.sleep(wait)


def _new_key():
    return "acq_" + secrets.token_hex(16)


def _options(license_key, fingerprint, user, hostname, metadata, feature, version):
    """What one acquisition asks for: the AcquireSeatRequest fields every
    try of it (and a reacquisition after an expiry) repeats."""
    return dict(license_key=license_key, fingerprint=fingerprint, user=user, hostname=hostname,
                metadata=dict(metadata or {}), feature=feature or "", version=version or "")


class Lease:
    """A seat held by this process; a context manager that releases it.

    lost is set once the lease is gone for good (expired, revoked, taken over
    elsewhere, or not acquired again); error and reason then say why. Our own
    release does not set it.

    expires_at is the deadline seatd told, a timezone-aware datetime in UTC
    (compare it with datetime.now(timezone.utc)); None from a server that
    sends none.

    feature and version are what the acquisition asked for ("" for a seat
    of the license's base pool); grant_id is the feature grant the seat was
    taken from, grant_expires_at that grant's expiry as the acquisition's
    answer told it (aware UTC; None when it has none, and for a base seat).
    seats_in_use and seat_limit are then the grant's.
    """

    def __init__(self, client, opts, resp, sent, borrowed=False, license_file=""):
        self._c, self._opts, self._keeper = client, opts, None
        self.borrowed = borrowed
        self._mu = threading.Lock()
        self._release_mu = threading.Lock()
        self.lost = threading.Event()
        self.error = None
        self._released = False
        self._take(resp, sent, license_file)

    def _take(self, resp, sent, license_file=""):
        # With vendor_keys, the license file (its JWS) the certificate
        # chained to: store it with a borrowed lease's certificate, for
        # verify_chain_offline. "" without vendor_keys.
        self.license_file = license_file
        pl = resp.lease
        self.id, self.token, self.license_id = pl.id, resp.lease_token, pl.license_id
        self.heartbeat_interval = _seconds(resp.heartbeat_interval)
        self.seats_in_use, self.seat_limit = resp.seats_in_use, resp.seat_limit
        self.expires_at = _utc(pl.expires_at) if pl.HasField("expires_at") else None
        # The latest; "" from a server that sends none, and without signing_keys
        # (the client then asks for none) but for a borrowed lease.
        self.certificate = resp.lease_certificate
        self.fingerprint = pl.fingerprint or self._opts["fingerprint"]
        self.feature, self.version, self.grant_id = pl.feature, pl.version, pl.grant_id
        grant = resp.grant if resp.HasField("grant") else None
        self.grant_expires_at = _utc(grant.expires_at) if grant and grant.HasField("expires_at") else None
        self._holder = holder_of(self._opts)  # ours, which every certificate must name
        self.ttl = _ttl(pl)
        self._deadline = self._local_deadline(sent, pl.expires_at)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    @property
    def reason(self):
        """The ErrorInfo reason the lease was lost for (e.g. LEASE_REVOKED), or ""."""
        return self.error.reason if self.error is not None else ""

    def _local_deadline(self, sent, expires_at):
        # sent + TTL errs early and is immune to a skew between the clocks.
        if self.ttl > 0:
            return sent + self.ttl
        return expires_at.ToNanoseconds() / 1e9 if expires_at.ByteSize() else None

    def heartbeat(self, timeout=None):
        """One unary heartbeat now; raises LeaseExpired etc. when the lease is gone."""
        lease_id, token, sent, nonce = self.id, self.token, self._c.t.now(), self._c._nonce()
        try:
            resp = _call(self._c._hb.Heartbeat, heartbeat_service_pb2.HeartbeatRequest(
                lease_id=lease_id, lease_token=token, nonce=nonce), timeout=timeout)
            file = self._check(nonce, resp.lease_certificate, resp.expires_at)
        except errors.LeaseLost as e:
            if self._keeper is None:
                self._mark_lost(e)  # nobody else will find out
            raise
        self._extend(lease_id, sent, resp.expires_at, _seconds(resp.heartbeat_interval), _ttl(resp.lease),
                     resp.lease_certificate, file)

    def _check(self, nonce, cert, expires_at):
        """With signing keys or vendor keys, verifies the certificate of an
        answer that extended this lease to expires_at and returns the
        license file it chained to (vendor keys; else ""); raises
        BadCertificate."""
        if not self._c._verifies():
            return ""
        return self._c._verify_cert(cert, nonce=nonce, lease_id=self.id, license_id=self.license_id,
                                    holder=self._holder,
                                    deadline=expires_at.ToNanoseconds() / 1e9 if expires_at.ByteSize() else None,
                                    grant_id=self.grant_id, borrowed=self.borrowed, now=self._c.t.now())

    def release(self, timeout=None):
        """Stops the heartbeats and gives the seat back. Idempotent; a lease
        already lost needs no release."""
        if self._keeper is not None:
            self._keeper.stop()
        with self._release_mu:
            if self._released or self.error is not None:
                return
            try:
                _call(self._c._seats.ReleaseSeat, seat_service_pb2.ReleaseSeatRequest(
                    lease_id=self.id, lease_token=self.token), timeout=timeout or self._c.t.call_timeout)
            except errors.LeaseLost:
                pass
            self._released = True

    def _extend(self, lease_id, sent, expires_at, interval, ttl, cert="", license_file=""):
        with self._mu:
            if lease_id != self.id:
                return
            if cert:
                self.certificate, self.license_file = cert, license_file
            if ttl > 0:
                self.ttl = ttl
            if interval > 0:
                self.heartbeat_interval = interval
            if expires_at.ByteSize():
                self.expires_at = _utc(expires_at)
            d = self._local_deadline(sent, expires_at)
            if d is not None and (self._deadline is None or d > self._deadline):
                self._deadline = d

    def _swap(self, resp, sent, license_file=""):
        with self._mu:
            self._take(resp, sent, license_file)

    def _mark_lost(self, err):
        with self._mu:
            if self.error is not None or self._released:
                return
            self.error = err
        log.warning("seatd lease %s lost: %s", self.id, err)
        self.lost.set()

    def _until_deadline(self):
        return float("inf") if self._deadline is None else self._deadline - self._c.t.now()

    def _ping_every(self):
        d, ttl = self.heartbeat_interval, self.ttl
        if ttl > 0 and d <= 0:
            d = ttl / 6
        elif ttl > 0 and d > ttl / 2:
            d = ttl / 2
        elif d <= 0:
            d = 10.0
        return max(d, self._c.t.min_interval)


def _utc(ts):
    """A protobuf Timestamp as a timezone-aware datetime in UTC (never a naive
    one, which Python would take for local time)."""
    return ts.ToDatetime(tzinfo=datetime.timezone.utc)


def _ttl(pl):
    if pl is None or not pl.HasField("expires_at"):
        return 0.0
    start = pl.last_heartbeat_at if pl.HasField("last_heartbeat_at") else pl.acquired_at
    if not start.ByteSize():
        return 0.0
    return max((pl.expires_at.ToNanoseconds() - start.ToNanoseconds()) / 1e9, 0.0)


class _Deadline(Exception):
    """The wall clock passed the lease's deadline (an outage, or the machine slept)."""


class _Reconnect(Exception):
    """The server is going away and asked us to move on."""


class _TryStream(Exception):
    """A stretch of unary heartbeats ended: try a stream again."""


class _Stopped(Exception):
    pass


_STREAM, _UNARY, _ONLY_UNARY = range(3)


class _Keeper:
    """Heartbeats one lease in a daemon thread until stopped or the lease is lost."""

    def __init__(self, lease):
        self.l, self.t = lease, lease._c.t
        self._stop = threading.Event()
        self._call = None
        self._thread = threading.Thread(target=self._run, name="seatd-keeper", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        call = self._call
        if call is not None:
            call.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self):
        try:
            self._loop()
        except _Stopped:
            pass
        except Exception:  # never die silently: the lease would expire unnoticed
            log.exception("seatd keeper crashed")
        finally:
            with self.l._c._mu:
                self.l._c._keepers.discard(self)

    def _loop(self):
        mode, failures, delay = _STREAM, 0, self.l._ping_every()  # just acquired: no beat needed yet
        while True:
            answered, err = False, None
            try:
                self._wait(delay)
                answered, err = self._session(mode)
            except _Deadline as e:
                err = e
            if isinstance(err, _Deadline):
                err = self._last_chance()
            if self._stop.is_set():
                return
            if err is None:
                delay = self.l._ping_every()
            elif isinstance(err, errors.LeaseLost):
                if not self._recover(err):
                    return
                failures, delay = 0, self.l._ping_every()
            elif isinstance(err, _Reconnect) and answered:
                log.debug("seatd asked to reconnect")
                delay = random.uniform(0, self.t.reconnect_jitter)
            elif isinstance(err, _TryStream):
                mode, delay = _STREAM, 0
            elif mode == _STREAM and getattr(err, "code", None) == grpc.StatusCode.UNIMPLEMENTED:
                log.info("seatd has no heartbeat stream; using unary heartbeats")
                mode, delay = _ONLY_UNARY, 0
            else:
                failures += 1
                if mode == _STREAM and failures >= self.t.stream_failures:
                    log.warning("heartbeat stream keeps failing (%s); using unary heartbeats for a while", err)
                    mode = _UNARY
                else:
                    log.debug("heartbeat failed (%s); retrying (%d)", err, failures)
                delay = self.t.backoff(failures, min(self.t.backoff_max, self.l._ping_every()))

    def _session(self, mode):
        """Returns (answered, error that ended the session)."""
        if mode == _STREAM:
            return self._stream()
        return self._unary(self.t.unary_before_stream if mode == _UNARY else 0)

    def _wait(self, d):
        """Sleeps d, but raises _Deadline as soon as the wall clock passes the
        deadline (after the machine slept, timers run late)."""
        end = time.monotonic() + d
        while True:
            if self.l._until_deadline() <= 0:
                raise _Deadline()
            left = end - time.monotonic()
            if left <= 0:
                return
            if self._stop.wait(min(left, self.t.clock_check)):
                raise _Stopped()

    def _last_chance(self):
        """One heartbeat once the deadline passed: the server decides."""
        try:
            self.l.heartbeat(timeout=self.t.last_chance)
            return None
        except errors.LeaseLost as e:
            return e
        except errors.SeatdError as e:
            return errors.local_error(errors.LeaseExpired, "LEASE_EXPIRED",
                                      "lease deadline passed without a successful heartbeat "
                                      "(did the machine sleep?); last heartbeat: %s" % e)

    def _recover(self, cause):
        """Acquires again after an expiry if allowed; else reports the loss."""
        if not self.l._c.reacquire_on_expiry or cause.reason not in ("LEASE_EXPIRED", "LEASE_NOT_FOUND"):
            self.l._mark_lost(cause)
            if isinstance(cause, errors.BadCertificate):
                # We stop heartbeating a lease we do not trust; if seatd is
                # real (a key newer than our JWKS, say), free the seat now.
                self.l._c._give_back(self.l.id, self.l.token)
            return False
        log.info("seatd lease %s expired; acquiring a seat again", self.l.id)
        give_up = self.t.now() + max(self.l.ttl, self.t.call_timeout)
        req = seat_service_pb2.AcquireSeatRequest(idempotency_key=_new_key(), nonce=self.l._c._nonce(), **self.l._opts)
        for n in range(1, 1 << 30):
            sent = self.t.now()
            try:
                resp = _call(self.l._c._seats.AcquireSeat, req, timeout=self.t.call_timeout)
            except errors.SeatdError as e:
                if self._stop.is_set():
                    return False
                if not errors.retryable(e) or self.t.now() > give_up:
                    self.l._mark_lost(e)
                    return False
                if self._stop.wait(max(self.t.backoff(n, self.t.backoff_max), e.retry_delay or 0)):
                    return False
                continue
            if self._stop.is_set():
                return False
            try:
                file = self.l._c._check(resp, req.nonce, self.l._opts, False)
            except errors.SeatdError as e:  # not the seat asked for, or not seatd's
                self.l._c._give_back(resp.lease.id, resp.lease_token)
                self.l._mark_lost(e)
                return False
            old = self.l.id
            self.l._swap(resp, sent, file)
            log.info("seatd seat acquired again: %s (was %s)", self.l.id, old)
            return True

    def _unary(self, beats):
        answered = False
        for n in range(1 << 30):
            try:
                if n > 0:
                    self._wait(self.l._ping_every())
                if beats > 0 and n == beats:
                    return answered, _TryStream()
                left = self.l._until_deadline()
                if left <= 0:
                    return answered, _Deadline()
                self.l.heartbeat(timeout=min(left, self.l._ping_every()))
            except (_Deadline, errors.SeatdError) as e:
                return answered, e
            answered = True

    def _stream(self):
        """One HeartbeatStream until it ends: ping at once (naming the lease),
        then every interval after each answer."""
        lease_id, token = self.l.id, self.l.token
        outbox, results = queue.Queue(), queue.Queue()

        def requests():
            while True:
                r = outbox.get()
                if r is None:
                    return
                yield r

        def read(call):
            try:
                for resp in call:
                    results.put((resp, None))
                results.put((None, errors.SeatdError(grpc.StatusCode.UNAVAILABLE, "stream closed by seatd")))
            except grpc.RpcError as e:
                results.put((None, errors.from_rpc_error(e)))

        nonce = self.l._c._nonce()
        outbox.put(heartbeat_service_pb2.HeartbeatStreamRequest(lease_id=lease_id, lease_token=token, nonce=nonce))
        try:
            call = self.l._c._hb.HeartbeatStream(requests())
        except grpc.RpcError as e:
            return False, errors.from_rpc_error(e)
        self._call = call
        if self._stop.is_set():
            call.cancel()
        reader = threading.Thread(target=read, args=(call,), name="seatd-stream", daemon=True)
        reader.start()
        answered, waiting, signal = False, True, _SIG.HEARTBEAT_SIGNAL_UNSPECIFIED
        sent = self.t.now()
        due = time.monotonic() + self.l._ping_every()
        try:
            while True:
                if self._stop.is_set():
                    raise _Stopped()
                if self.l._until_deadline() <= 0:
                    return answered, _Deadline()
                try:
                    resp, err = results.get(timeout=max(min(due - time.monotonic(), self.t.clock_check), 0))
                except queue.Empty:
                    if time.monotonic() < due:
                        continue
                    if waiting:
                        return answered, errors.SeatdError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                                           "heartbeat stream: no answer in time")
                    sent, waiting, nonce = self.t.now(), True, self.l._c._nonce()
                    outbox.put(heartbeat_service_pb2.HeartbeatStreamRequest(nonce=nonce))
                    due = time.monotonic() + self.l._ping_every()  # now the answer timeout
                    continue
                if err is not None:
                    return answered, _stream_end(err, signal)
                if resp.signal == _SIG.HEARTBEAT_SIGNAL_RECONNECT:
                    return answered, _Reconnect()
                if resp.signal in (_SIG.HEARTBEAT_SIGNAL_REVOKED, _SIG.HEARTBEAT_SIGNAL_EXPIRED):
                    signal = resp.signal  # the status that ends the stream follows
                    continue
                try:
                    # One ping at a time: an answer to none repeats no nonce of ours.
                    file = self.l._check(nonce if waiting else "", resp.lease_certificate, resp.expires_at)
                except errors.BadCertificate as e:
                    return answered, e
                self.l._extend(lease_id, sent, resp.expires_at, _seconds(resp.heartbeat_interval), 0,
                               resp.lease_certificate, file)
                answered, waiting = True, False
                due = time.monotonic() + self.l._ping_every()
        finally:
            outbox.put(None)
            call.cancel()
            self._call = None
            reader.join()


def _stream_end(err, signal):
    """The error a stream ended with: its status, or the signal sent before it
    when the status says less (a proxy may rewrite it)."""
    if isinstance(err, errors.LeaseLost):
        return err
    if signal == _SIG.HEARTBEAT_SIGNAL_REVOKED:
        return errors.local_error(errors.LeaseRevoked, "LEASE_REVOKED", "lease was revoked")
    if signal == _SIG.HEARTBEAT_SIGNAL_EXPIRED:
        return errors.local_error(errors.LeaseExpired, "LEASE_EXPIRED", "lease expired; acquire a new seat")
    return err


class AdminClient(_Connected):
    """The operator calls of AdminService, with the operator (or a tenant API)
    key as bearer. Every method of the service is a snake_case method taking
    the request's fields as keywords and returning the response, e.g.
    admin.create_license(license=License(...)), admin.revoke_lease(lease_id=...).
    """

    def __init__(self, address=None, key="", tls=False, *, options=(), channel=None, timeout=30.0):
        super().__init__(address, tls, options, channel)
        self.stub = admin_service_pb2_grpc.AdminServiceStub(self.channel)
        self._md = (("authorization", "Bearer " + key),) if key else None
        self.timeout = timeout

    def __getattr__(self, name):
        if name.startswith("_") or name in ("stub", "channel", "timeout"):
            raise AttributeError(name)  # not set yet: no method of that name
        camel = "".join(p.capitalize() for p in name.split("_"))
        method = getattr(self.stub, camel, None)
        request = getattr(admin_service_pb2, camel + "Request", None)
        if method is None or request is None:
            raise AttributeError(name)

        def call(timeout=None, **fields):
            return _call(method, request(**fields), timeout=timeout or self.timeout, metadata=self._md)
        return call

    def create_license(self, name, seats, lease_ttl=360.0, **fields):
        """Creates a license (lease_ttl in seconds) and returns it (its .key is the secret)."""
        lic = resources_pb2.License(name=name, seats=seats, lease_ttl=_duration(lease_ttl), **fields)
        return self.__getattr__("create_license")(license=lic).license
