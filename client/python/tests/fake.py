"""An in-process fake seatd that signs lease certificates with a key of the
test's own (python3-cryptography), and can spoil them: the server a
customer might run to get seats for nothing, or a broken one."""

import base64
import hashlib
import json
import threading
import time
from concurrent import futures

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from google.protobuf import duration_pb2, timestamp_pb2

from seatd._rpc.google.rpc import error_details_pb2, status_pb2
from seatd.v1 import heartbeat_service_pb2, heartbeat_service_pb2_grpc, resources_pb2, seat_service_pb2, \
    seat_service_pb2_grpc


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class Signer:
    """An Ed25519 key with a kid, signing as seatd does."""

    def __init__(self, kid):
        self.kid, self.key = kid, Ed25519PrivateKey.generate()

    def jwk(self):
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw), "kid": self.kid, "use": "sig", "alg": "EdDSA"}

    def sign(self, claims, header=None, signer=None):
        head = b64url(json.dumps(header or {"alg": "EdDSA", "kid": self.kid}).encode())
        body = b64url(json.dumps(claims).encode())
        sig = (signer or self).key.sign((head + "." + body).encode())
        return head + "." + body + "." + b64url(sig)


def jwks(*signers):
    return json.dumps({"keys": [s.jwk() for s in signers]}).encode()


def key_hash(license_key):
    return hashlib.sha256(license_key.encode()).hexdigest()


def claims(lease_id, fingerprint, deadline, nonce, borrowed=False, feature="", version=""):
    """seatd's claims for a lease of license key "key" bound to fingerprint;
    with a feature, of the grant GRANT_ID (expiring at GRANT_EXPIRES_AT)."""
    c = {"iss": "seatd", "sub": lease_id, "lease_id": lease_id, "tenant_id": "default", "license_id": "lic-1",
         "fingerprint": fingerprint, "user": "", "hostname": "", "bound_to": "fingerprint",
         "license_key_sha256": key_hash("key"), "iat": int(time.time()), "exp": int(deadline),
         "borrowed": borrowed, "nonce": nonce}
    if feature:
        c.update(feature=feature, version=version, grant_id=GRANT_ID, grant_expires_at=GRANT_EXPIRES_AT,
                 grant_version=GRANT_VERSION)
    return c


# The one feature grant of the fake's license: every feature asked for is
# granted from it (unless FakeSeatd.refuse says otherwise).
GRANT_ID = "lic-1.0a1b2c3d"
GRANT_EXPIRES_AT = 1893456000  # 2030-01-01T00:00:00Z
GRANT_VERSION = "2030"  # the highest version the grant covers


# How a certificate is spoiled. "relayed": a relay serving its one lease to
# other clients (its answer and certificate name the relay's machine);
# "other license key": a lease of another license; "unbound": as an older
# seatd signed (no bound_to, no license_key_sha256); "other user": a lease
# shared per user, another user's.
FORGERIES = ["missing", "other key", "unknown kid", "other nonce", "later exp", "other lease", "other fingerprint",
             "one byte changed", "alg none", "relayed", "other license key", "unbound", "other user"]
# Spoiled certificates of a lease of a feature: "base pool" (a certificate
# of a base seat, no feature claims: what a relay of a base seat would
# serve), "other feature", "other version" (a grant of an older version),
# "other grant".
FEATURE_FORGERIES = ["base pool", "other feature", "other version", "other grant"]
RELAY_FINGERPRINT = "relay-machine"


def certificate(signer, c, forge=None):
    if forge == "missing":
        return ""
    if forge == "other key":
        return signer.sign(c, signer=Signer(signer.kid))
    if forge == "unknown kid":
        other = Signer(signer.kid + "-unknown")
        return other.sign(c)
    if forge == "other nonce":
        c["nonce"] = "recorded-earlier"
    if forge == "later exp":
        c["exp"] += 3600
    if forge == "other lease":
        c["sub"] = c["lease_id"] = "lease-other"
    if forge == "other fingerprint":
        c["fingerprint"] = "another-machine"
    if forge == "relayed":
        c["fingerprint"] = RELAY_FINGERPRINT
    if forge == "other license key":
        c["license_key_sha256"] = key_hash("another-key")
    if forge == "unbound":
        del c["bound_to"], c["license_key_sha256"]
    if forge == "other user":
        c["bound_to"], c["user"] = "user", "bob"
    if forge == "base pool":
        for k in ("feature", "version", "grant_id", "grant_expires_at", "grant_version"):
            c.pop(k, None)
    if forge == "other feature":
        c["feature"] = "sim"
    if forge == "other version":
        c["grant_version"] = "2023"
    if forge == "other grant":
        c["grant_id"] = "lic-1.ffffffff"
    if forge == "alg none":
        head = b64url(json.dumps({"alg": "none", "kid": signer.kid}).encode())
        return head + "." + b64url(json.dumps(c).encode()) + "."
    token = signer.sign(c)
    if forge == "one byte changed":
        head, body, sig = token.split(".")
        raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        i = raw.index(b'"fingerprint": "') + len('"fingerprint": "')
        raw[i] ^= 1
        token = head + "." + b64url(bytes(raw)) + "." + sig
    return token


def _abort(ctx, code, reason, metadata):
    """Fails the call as seatd does: the status with an ErrorInfo in
    grpc-status-details-bin."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain="seatd", metadata=metadata)
    st = status_pb2.Status(code=code.value[0], message="refused (test): " + reason)
    st.details.add().Pack(info)
    ctx.set_trailing_metadata((("grpc-status-details-bin", st.SerializeToString()),))
    ctx.abort(code, st.message)


def _ts(t):
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(t * 1e9))
    return ts


def _dur(s):
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(s * 1e9))
    return d


class FakeSeatd(seat_service_pb2_grpc.SeatServiceServicer, heartbeat_service_pb2_grpc.HeartbeatServiceServicer):
    """Leases in memory, TTL ttl, heartbeat every interval; certificates
    signed by signer (None: none sent) and spoiled by forge. Like seatd it
    signs only when asked: a request with a nonce, or a borrow. nonces holds
    the nonce of each request, by RPC ("acquire", "heartbeat", "stream",
    "wait"), in order.

    A request's feature is granted from the one grant GRANT_ID, unless
    features is False (a seatd from before features: the field is ignored
    and the seat is the base pool's) or refuse is (reason, metadata): every
    acquisition then fails FAILED_PRECONDITION with that ErrorInfo.
    refusals are (code, reason, metadata) the next AcquireSeat calls fail
    with, one each (a site policy's); queue False answers WaitForSeat
    UNIMPLEMENTED, as a seatd without the queue."""

    def __init__(self, signer, ttl=5.0, interval=0.2):
        self.signer, self.ttl, self.interval = signer, ttl, interval
        self.forge = None
        self.lend = True  # False: ignore borrow_duration, as a server without borrowing
        self.features = True
        self.refuse = None
        self.refusals = []
        self.queue = True
        # Locked mode: dict(file=the JWS GetSignedLicenseFile answers,
        # serial=, license=) named in every certificate; None: none.
        self.locked = None
        self.file_fetches = 0
        self.acquires = 0
        self.mu = threading.Lock()
        self.leases = {}  # id -> dict(token, fingerprint, deadline, borrowed, live)
        self.beats = 0
        self.nonces = {}
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        seat_service_pb2_grpc.add_SeatServiceServicer_to_server(self, self.server)
        heartbeat_service_pb2_grpc.add_HeartbeatServiceServicer_to_server(self, self.server)
        self.address = "127.0.0.1:%d" % self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def stop(self):
        self.server.stop(0).wait()

    def live(self):
        with self.mu:
            return sum(1 for l in self.leases.values() if l["live"])

    def seen_nonces(self):
        with self.mu:
            return {rpc: list(n) for rpc, n in self.nonces.items()}

    def _noted(self, rpc, nonce):
        with self.mu:
            self.nonces.setdefault(rpc, []).append(nonce)
        return nonce

    def _cert(self, lease_id, nonce):
        l = self.leases[lease_id]
        if self.signer is None or not (nonce or l["borrowed"]):
            return ""
        c = claims(lease_id, l["fingerprint"], l["deadline"], nonce, l["borrowed"], l["feature"], l["version"])
        if self.locked is not None:
            c.update(license_id=self._license_id(), file_serial=self.locked["serial"],
                     file_license_id=self.locked["license"])
        return certificate(self.signer, c, self.forge)

    def _license_id(self):
        return "lic_" + self.locked["license"] if self.locked is not None else "lic-1"

    def GetSignedLicenseFile(self, req, ctx):
        with self.mu:
            locked = self.locked
            self.file_fetches += 1
        if locked is None:
            _abort(ctx, grpc.StatusCode.FAILED_PRECONDITION, "LICENSE_FILE_NOT_CONFIGURED", {})
        return seat_service_pb2.GetSignedLicenseFileResponse(license_file=locked["file"], serial=locked["serial"])

    def _grant(self, req, nonce, borrow=0.0):
        with self.mu:
            lease_id = "lease-%d" % (len(self.leases) + 1)
            borrowed = borrow > 0 and self.lend
            deadline = time.time() + (borrow if borrowed else self.ttl)
            feature, version = (req.feature, req.version) if self.features else ("", "")
            self.leases[lease_id] = dict(token="token-" + lease_id, fingerprint=req.fingerprint, deadline=deadline,
                                         borrowed=borrowed, live=True, feature=feature, version=version)
            now = time.time()
            grant = resources_pb2.FeatureGrant(id=GRANT_ID, license_id="lic-1", feature=feature, version=GRANT_VERSION,
                                               seats=10, expires_at=_ts(GRANT_EXPIRES_AT)) if feature else None
            return seat_service_pb2.AcquireSeatResponse(
                lease=resources_pb2.Lease(id=lease_id, license_id=self._license_id(),
                                          fingerprint=RELAY_FINGERPRINT if self.forge == "relayed" else req.fingerprint,
                                          borrowed=borrowed, acquired_at=_ts(now), last_heartbeat_at=_ts(now),
                                          expires_at=_ts(deadline), feature=feature, version=version,
                                          grant_id=GRANT_ID if feature else ""),
                lease_token="token-" + lease_id, heartbeat_interval=_dur(self.interval), seats_in_use=1,
                seat_limit=10, lease_certificate=self._cert(lease_id, nonce), grant=grant)

    def _refused(self, ctx):
        """Fails the call when refuse is set."""
        if self.refuse is not None:
            _abort(ctx, grpc.StatusCode.FAILED_PRECONDITION, *self.refuse)

    def AcquireSeat(self, req, ctx):
        self._refused(ctx)
        with self.mu:
            self.acquires += 1
            refusal = self.refusals.pop(0) if self.refusals else None
        if refusal is not None:
            _abort(ctx, *refusal)
        borrow = req.borrow_duration.ToNanoseconds() / 1e9 if req.HasField("borrow_duration") else 0.0
        return self._grant(req, self._noted("acquire", req.nonce), borrow)

    def WaitForSeat(self, req, ctx):
        self._refused(ctx)
        if not self.queue:
            ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown method WaitForSeat")
        self._noted("wait", req.nonce)
        yield seat_service_pb2.WaitForSeatResponse(position=seat_service_pb2.QueuePosition(
            position=1, queue_length=1, ticket="w1"))
        yield seat_service_pb2.WaitForSeatResponse(granted=self._grant(req, req.nonce))

    def ReleaseSeat(self, req, ctx):
        with self.mu:
            l = self.leases.get(req.lease_id)
            if l is None or l["token"] != req.lease_token:
                ctx.abort(grpc.StatusCode.NOT_FOUND, "no such lease")
            l["live"] = False
        return seat_service_pb2.ReleaseSeatResponse()

    def GetSigningKeys(self, req, ctx):
        keys = [resources_pb2.JsonWebKey(**self.signer.jwk())] if self.signer else []
        return seat_service_pb2.GetSigningKeysResponse(keys=keys)

    def _beat(self, lease_id, token, nonce, ctx):
        with self.mu:
            l = self.leases.get(lease_id)
            if l is not None and l.get("expired"):
                _abort(ctx, grpc.StatusCode.FAILED_PRECONDITION, "LEASE_EXPIRED", {})
            if l is None or l["token"] != token or not l["live"]:
                ctx.abort(grpc.StatusCode.NOT_FOUND, "no such lease")
            l["deadline"] = time.time() + self.ttl
            self.beats += 1
            return l["deadline"], self._cert(lease_id, nonce)

    def Heartbeat(self, req, ctx):
        deadline, cert = self._beat(req.lease_id, req.lease_token, self._noted("heartbeat", req.nonce), ctx)
        return heartbeat_service_pb2.HeartbeatResponse(expires_at=_ts(deadline), heartbeat_interval=_dur(self.interval),
                                                       lease_certificate=cert)

    def HeartbeatStream(self, requests, ctx):
        lease_id = token = None
        for req in requests:
            if lease_id is None:
                lease_id, token = req.lease_id, req.lease_token
            deadline, cert = self._beat(lease_id, token, self._noted("stream", req.nonce), ctx)
            yield heartbeat_service_pb2.HeartbeatStreamResponse(expires_at=_ts(deadline),
                                                                heartbeat_interval=_dur(self.interval),
                                                                lease_certificate=cert)


def kid_of(raw):
    """seatd's kid of a public key: base64url of the first 12 bytes of its SHA-256."""
    return b64url(hashlib.sha256(raw).digest()[:12])


def site_signer():
    """A Signer whose kid is its key's, as seatd's site key's is."""
    s = Signer("")
    s.kid = kid_of(s.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    return s


def file_terms(site_jwk, serial, seats=2, not_after=None, issued_at=None):
    """A license file's terms for the site key site_jwk: the license "cad"
    (a 1-minute TTL) with a grant of feature render, issued an hour ago,
    until not_after (Unix seconds; default a day from now). In the form
    seatd reads strictly: every field it knows, none it does not."""
    now = int(time.time())
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    return {"serial": serial, "customer": "Acme", "issued_at": iso(issued_at or now - 3600),
            "not_after": iso(not_after or now + 86400),
            "site_key": {"kty": "OKP", "crv": "Ed25519", "x": site_jwk["x"], "kid": site_jwk["kid"]},
            "licenses": [{"id": "cad", "name": "ACME CAD", "seats": seats, "lease_ttl": "1m0s",
                          "grants": [{"id": "render", "feature": "render", "seats": 1}]}]}


class Vendor:
    """A vendor's key pair, signing license files as seatctl vendor sign
    does (python3-cryptography only)."""

    def __init__(self):
        self.key = Ed25519PrivateKey.generate()
        self.raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.kid = kid_of(self.raw)

    def pem(self):
        return self.key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)

    def token(self, terms, typ="seatd-license-file-v1"):
        """The file's JWS: header exactly alg, kid, typ; the payload compact."""
        head = b64url(json.dumps({"alg": "EdDSA", "kid": self.kid, "typ": typ}, separators=(",", ":")).encode())
        body = b64url(json.dumps(terms, separators=(",", ":")).encode())
        return head + "." + body + "." + b64url(self.key.sign((head + "." + body).encode()))

    def file(self, terms):
        """site.lic: the readable copy (the payload indented), then the JWS
        wrapped at 64 columns."""
        token = self.token(terms)
        lines = [token[i:i + 64] for i in range(0, len(token), 64)]
        return ("-----BEGIN SEATD LICENSE FILE-----\n" + json.dumps(terms, indent=2) +
                "\n-----BEGIN SEATD SIGNATURE-----\n" + "\n".join(lines) + "\n-----END SEATD SIGNATURE-----\n")
