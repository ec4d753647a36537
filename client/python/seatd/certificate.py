"""Lease certificates: seatd's signed proof that it granted a lease.

A certificate is a JWS compact token (three base64url parts, header.claims.
signature), alg EdDSA, signed with the tenant's Ed25519 key that its kid
names. The tenant's public keys are a JWKS (GetSigningKeys, or
GET /v1/tenants/{tenant_id}/jwks.json). Verified here with Debian's
python3-cryptography; no JWT library is needed.
"""

import base64
import binascii
import collections
import hashlib
import json
import secrets
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seatd import errors

ISSUER = "seatd"

BOUND_TO_FINGERPRINT, BOUND_TO_USER, BOUND_TO_HOSTNAME = "fingerprint", "user", "hostname"


def license_key_hash(license_key):
    """The license_key_sha256 claim of a license key: its SHA-256, lowercase hex."""
    return hashlib.sha256(license_key.encode("utf-8")).hexdigest()


class Claims(collections.namedtuple("Claims", [
    "issuer",       # always "seatd"
    "lease_id",     # the sub and lease_id claims
    "tenant_id",    # the tenant whose key signed it
    "license_id",
    "fingerprint",  # the machine the lease was granted to (the first one, for a shared lease)
    "user",         # the user it was granted to, "" if none was sent
    "hostname",     # the hostname it was granted to, "" if none was sent
    "bound_to",     # whom the lease is for: "fingerprint", or "user"/"hostname" for a shared lease; "" if unbound
    "license_key_sha256",  # license_key_hash of the license key; "" if unbound
    "issued_at",    # iat, Unix seconds
    "expiry",       # exp, Unix seconds: the lease's deadline rounded down
    "borrowed",     # a seat borrowed for offline use
    "nonce",        # the nonce of the request it answers
    "key_id",       # the kid of the key that signed it
    # A lease of a feature grant (AcquireSeat's feature); each "" (0) for a
    # lease of the license's base pool. Last and with defaults, so that
    # Claims built by position before features keep working.
    "feature",      # the feature the lease holds a seat of
    "version",      # the version asked for ("" if none was)
    "grant_id",     # the grant the seat was taken from
    "grant_expires_at",  # the grant's expiry, Unix seconds; 0 if it has none
    "grant_version",  # the highest version the grant covers ("" every version)
    # A certificate of a seatd in locked mode, signed by its site key
    # (LicenseFile.verify): the serial of the license file in force and
    # the file's id of the license (license_id is "lic_" and it); 0 and ""
    # otherwise.
    "file_serial",
    "file_license_id",
], defaults=("", "", "", 0, "", 0, ""))):
    """What a lease certificate says (times in whole Unix seconds)."""

    __slots__ = ()

    def check_holder(self, license_key, fingerprint, user="", hostname="", feature="", version=""):
        """Raises BadCertificate unless the certificate is for the client
        that asks with these values, its own: the hash of its license key,
        the identity bound_to names (its fingerprint, or its user or
        hostname for a lease the license shares per user or hostname), and
        the feature and version it asks for ("" for a base seat: a seat of
        another module, or of a grant that does not cover the version,
        unlocks nothing; the grant_version claim says what the seat covers,
        the version claim what was first asked). Never
        compare with what an answer says: a relay holding one lease would
        pass. A certificate of a seatd that did not bind certificates (no
        bound_to or license_key_sha256) is refused."""
        _check_holder(self, (license_key_hash(license_key), fingerprint, user, hostname, feature, version))


def _check_holder(c, holder):
    key_hash, fingerprint, user, hostname, feature, version = holder
    if not c.license_key_sha256 or not c.bound_to:
        raise errors.BadCertificate("it names no license key or holder (signed by a seatd that does not bind "
                                    "certificates to their client: upgrade seatd)")
    if c.license_key_sha256 != key_hash:
        raise errors.BadCertificate("for another license key than the one this client uses")
    pairs = {BOUND_TO_FINGERPRINT: (c.fingerprint, fingerprint), BOUND_TO_USER: (c.user, user),
             BOUND_TO_HOSTNAME: (c.hostname, hostname)}
    if c.bound_to not in pairs:
        raise errors.BadCertificate("bound to %r, which this client does not know" % c.bound_to)
    theirs, ours = pairs[c.bound_to]
    if not ours or theirs != ours:
        raise errors.BadCertificate("for %s %r, not this client's %r" % (c.bound_to, theirs, ours))
    if c.feature != feature:
        raise errors.BadCertificate("for feature %r, not the %r this client asked for" % (c.feature, feature))
    if version and c.grant_version and compare_versions(version, c.grant_version) > 0:
        raise errors.BadCertificate("for a grant covering version %s, not the %s this client asked for"
                                    % (c.grant_version, version))


def compare_versions(a, b):
    """Compares two dotted versions component by component as numbers of
    any length (1.9 < 1.10; a missing component is 0, so 3 == 3.0): -1, 0
    or 1, as seatd does."""
    x, y = a.split("."), b.split(".")
    for i in range(max(len(x), len(y))):
        p = (x[i] if i < len(x) else "0").lstrip("0")
        q = (y[i] if i < len(y) else "0").lstrip("0")
        if len(p) != len(q):
            return -1 if len(p) < len(q) else 1
        if p != q:
            return -1 if p < q else 1
    return 0


def holder_of(opts):
    """What a client knows of itself (its acquisition's options), which
    every certificate of its lease must name."""
    return (license_key_hash(opts["license_key"]), opts["fingerprint"], opts.get("user") or "",
            opts.get("hostname") or "", opts.get("feature") or "", opts.get("version") or "")


def new_nonce():
    """16 random bytes, base64url: sent with every request of a client that
    verifies certificates, and with every borrow; repeated by the certificate
    of its answer so that a recorded answer cannot be replayed."""
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()


def _b64url(part, what):
    if not isinstance(part, str) or "=" in part:
        raise errors.BadCertificate("%s is not base64url" % what)
    try:
        std = part.translate(str.maketrans("-_", "+/"))
        return base64.b64decode(std + "=" * (-len(std) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise errors.BadCertificate("%s is not base64url" % what) from None


class SigningKeys:
    """A tenant's public keys (a JWKS: bytes, str or the parsed dict).

    Only Ed25519 keys (kty OKP, crv Ed25519) with a kid are kept; keys of
    other types are skipped. ValueError when no key is left, a kid appears
    twice, or the set holds a private key.
    """

    def __init__(self, jwks):
        if isinstance(jwks, (bytes, str)):
            try:
                jwks = json.loads(jwks)
            except ValueError as e:
                raise ValueError("JWKS is not JSON: %s" % e) from None
        if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
            raise ValueError('JWKS must be {"keys": [...]}')
        self._keys = {}
        for jwk in jwks["keys"]:
            if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
                continue
            kid = jwk.get("kid") or ""
            if "d" in jwk:
                raise ValueError("JWKS key %r holds a private key; publish only public keys" % kid)
            if not kid or jwk.get("alg", "EdDSA") not in ("", "EdDSA") or jwk.get("use", "sig") not in ("", "sig"):
                continue
            try:
                raw = _b64url(jwk.get("x", ""), "x")
                key = Ed25519PublicKey.from_public_bytes(raw)
            except (errors.BadCertificate, ValueError):
                raise ValueError("JWKS key %r: x is not an Ed25519 public key" % kid) from None
            if kid in self._keys:
                raise ValueError("JWKS kid %r appears twice" % kid)
            self._keys[kid] = key
        if not self._keys:
            raise ValueError("JWKS holds no Ed25519 signing key (kty OKP, crv Ed25519, with a kid)")

    @property
    def key_ids(self):
        return sorted(self._keys)

    def verify(self, cert, now=None):
        """Checks a stored certificate without a network: signed (EdDSA) by
        the key its kid names, issued by seatd, not expired at now (Unix
        seconds, default time.time(): now must be before exp). Returns its
        Claims; the caller checks what they must say (its own fingerprint,
        the license, borrowed). Raises BadCertificate (CertificateExpired
        when only the time is wrong)."""
        c = self._verify(cert)
        now = time.time() if now is None else _unix(now)
        if now >= c.expiry:
            raise errors.CertificateExpired("expired at %s (now %s)" % (_iso(c.expiry), _iso(now)))
        return c

    def _verify(self, cert):
        raw, kid = self._signed(cert)
        return _claims(raw, kid)

    def verify_returned(self, token, tenant_id, max_age=0, now=None):
        """Checks a signed list of returned certificates (GetReturnedCertificates,
        GET /v1/tenants/{tenant_id}/returned.jwt): a JWS signed (EdDSA) by the
        key its kid names, typ "seatd-returned+jwt" (never a lease
        certificate), iss seatd, for tenant_id, with an iat. max_age > 0
        (seconds) also refuses a list signed more than max_age before now
        or more than a minute after it: what a product that has just
        fetched the list asks, so that a replayed old list is not taken for
        the current one; offline, check the kept list with max_age 0.
        Returns a ReturnedList; raises BadCertificate."""
        raw, kid = self._signed(token, RETURNED_TYPE)
        if raw.get("iss") != ISSUER:
            raise errors.BadCertificate("returned list: issuer %r, want %r" % (raw.get("iss"), ISSUER))
        if raw.get("tenant_id") != tenant_id:
            raise errors.BadCertificate("returned list: of tenant %r, not %r" % (raw.get("tenant_id"), tenant_id))
        iat, entries = raw.get("iat"), raw.get("returned") or []
        if not _number(iat):
            raise errors.BadCertificate("returned list: no iat")
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("sub"), str)
                                                    for e in entries):
            raise errors.BadCertificate("returned list: returned must be a list of {sub, exp}")
        now = time.time() if now is None else _unix(now)
        if max_age and (now - iat > max_age or iat - now > 60):
            raise errors.BadCertificate("returned list: signed at %s, not within %ss of now (%s): an old list "
                                        "replayed, or a wrong clock" % (_iso(iat), max_age, _iso(now)))
        return ReturnedList(tenant_id=tenant_id, issued_at=int(iat), key_id=kid, token=token,
                            returned=frozenset(e["sub"] for e in entries))

    def _signed(self, cert, typ=None):
        """The claims (a dict) and kid of a JWS signed by one of the keys;
        typ, when given, is the header's typ it must have."""
        if not cert:
            raise errors.BadCertificate("none in seatd's answer")
        parts = cert.split(".") if isinstance(cert, str) else []
        if len(parts) != 3:
            raise errors.BadCertificate("not a JWS compact token (three base64url parts)")
        try:
            header = json.loads(_b64url(parts[0], "header"))
        except ValueError:
            raise errors.BadCertificate("header is not JSON") from None
        if not isinstance(header, dict) or header.get("alg") != "EdDSA":
            raise errors.BadCertificate("alg %r, want EdDSA" % (header.get("alg") if isinstance(header, dict) else None))
        if typ is not None and header.get("typ") != typ:
            raise errors.BadCertificate("typ %r, want %r" % (header.get("typ"), typ))
        if "crit" in header:
            raise errors.BadCertificate("critical header parameters %r are not understood" % (header["crit"],))
        kid = header.get("kid")
        if not kid or not isinstance(kid, str):
            raise errors.BadCertificate("no kid in its header")
        key = self._keys.get(kid)
        if key is None:
            raise errors.BadCertificate("signed by key %r, which the JWKS does not hold (another tenant's key, or "
                                        "a key newer than the JWKS: fetch it again after a rotation)" % kid)
        sig = _b64url(parts[2], "signature")
        try:
            key.verify(sig, (parts[0] + "." + parts[1]).encode("ascii"))
        except (InvalidSignature, UnicodeEncodeError):
            raise errors.BadCertificate("signature does not verify with key %r" % kid) from None
        try:
            raw = json.loads(_b64url(parts[1], "claims"))
        except ValueError:
            raise errors.BadCertificate("claims are not JSON") from None
        if not isinstance(raw, dict):
            raise errors.BadCertificate("claims are not a JSON object")
        return raw, kid

    def check(self, cert, *, nonce, lease_id, holder, deadline, license_id="", borrowed=False, now=None,
              grant_id=""):
        """Verifies the certificate of an answer (deadline: the one it told,
        Unix seconds): as verify, and it repeats our nonce, names this lease
        and license (and grant_id, when the answer names one), is for this
        client (holder, holder_of: our license key, identity, feature and
        version, never what an answer says), and its exp is that deadline
        rounded down (less than a second apart), not passed. Raises
        BadCertificate."""
        c = self._verify(cert)
        _expect(c, nonce=nonce, lease_id=lease_id, holder=holder, deadline=deadline, license_id=license_id,
                borrowed=borrowed, now=now, grant_id=grant_id)
        return c


def _expect(c, *, nonce, lease_id, holder, deadline, license_id, borrowed, now, grant_id):
    """Raises BadCertificate unless c, verified, is what the certificate of
    an answer must say (SigningKeys.check)."""
    now = time.time() if now is None else _unix(now)
    _check_holder(c, holder)
    if grant_id and c.grant_id != grant_id:
        raise errors.BadCertificate("for grant %r, not %r" % (c.grant_id, grant_id))
    if not nonce or c.nonce != nonce:
        raise errors.BadCertificate("nonce %r is not the one sent (a recorded answer replayed?)" % c.nonce)
    if c.lease_id != lease_id:
        raise errors.BadCertificate("for lease %r, not %r" % (c.lease_id, lease_id))
    if license_id and c.license_id != license_id:
        raise errors.BadCertificate("for license %r, not %r" % (c.license_id, license_id))
    if c.borrowed != borrowed:
        raise errors.BadCertificate("borrowed is %s, want %s" % (c.borrowed, borrowed))
    if deadline is None or abs(deadline - c.expiry) >= 1:
        raise errors.BadCertificate("exp %s is not the deadline seatd told (%s)"
                                    % (_iso(c.expiry), _iso(deadline) if deadline else None))
    if now >= c.expiry + 1:
        raise errors.CertificateExpired("expired at %s (now %s; is this machine's clock right?)"
                                        % (_iso(c.expiry), _iso(now)))


def _claims(raw, kid):
    """The Claims of a certificate's verified payload raw, signed by kid."""
    if raw.get("iss") != ISSUER:
        raise errors.BadCertificate("issuer %r, want %r" % (raw.get("iss"), ISSUER))
    if not raw.get("sub") or raw.get("sub") != raw.get("lease_id"):
        raise errors.BadCertificate("sub %r and lease_id %r must name the same lease"
                                    % (raw.get("sub"), raw.get("lease_id")))
    exp, iat, grant_exp = raw.get("exp"), raw.get("iat", 0), raw.get("grant_expires_at", 0)
    if not _number(exp) or not _number(iat) or not _number(grant_exp):
        raise errors.BadCertificate("exp, iat and grant_expires_at must be numbers")
    file_serial = raw.get("file_serial", 0)
    if not _number(file_serial):
        raise errors.BadCertificate("file_serial must be a number")
    return Claims(issuer=raw["iss"], lease_id=raw["lease_id"], tenant_id=_str(raw, "tenant_id"),
                  license_id=_str(raw, "license_id"), fingerprint=_str(raw, "fingerprint"),
                  user=_str(raw, "user"), hostname=_str(raw, "hostname"), bound_to=_str(raw, "bound_to"),
                  license_key_sha256=_str(raw, "license_key_sha256"),
                  issued_at=int(iat), expiry=int(exp), borrowed=raw.get("borrowed") is True,
                  nonce=_str(raw, "nonce"), key_id=kid, feature=_str(raw, "feature"),
                  version=_str(raw, "version"), grant_id=_str(raw, "grant_id"),
                  grant_expires_at=int(grant_exp), grant_version=_str(raw, "grant_version"),
                  file_serial=int(file_serial), file_license_id=_str(raw, "file_license_id"))


def verify_offline(cert, jwks, now=None, returned=None):
    """SigningKeys(jwks).verify(cert, now): the product's start-up check of a
    stored certificate (a borrowed seat, say) with the JWKS it embeds.
    returned is the signed list of returned certificates the product kept
    (None or "" when it has none yet): a certificate it names raises
    CertificateReturned although it verifies and has not expired."""
    keys = SigningKeys(jwks)
    c = keys.verify(cert, now)
    if returned:
        keys.verify_returned(returned, c.tenant_id, 0, now).check(c)
    return c


RETURNED_TYPE = "seatd-returned+jwt"


class ReturnedList(collections.namedtuple("ReturnedList", ["tenant_id", "issued_at", "key_id", "token", "returned"])):
    """A verified signed list of returned certificates: returned is the
    set of lease ids (certificate subs) returned before their expiry;
    token is the list as received, to store beside the certificate."""

    __slots__ = ()

    def names(self, lease_id):
        return lease_id in self.returned

    def check(self, claims):
        """Raises CertificateReturned if the list names the certificate."""
        if claims.lease_id in self.returned:
            raise errors.CertificateReturned("lease %r was returned early (listed as returned at %s)"
                                             % (claims.lease_id, _iso(self.issued_at)))


def newer(kept, fetched):
    """Whichever verified list was signed later (kept may be None): a
    product never replaces its list by an older one, which a replay could
    use to unlist a returned certificate."""
    if kept is None or (fetched is not None and fetched.issued_at >= kept.issued_at):
        return fetched
    return kept


def _str(raw, name):
    v = raw.get(name, "")
    if not isinstance(v, str):
        raise errors.BadCertificate("%s must be a string" % name)
    return v


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _unix(t):
    return t.timestamp() if hasattr(t, "timestamp") else float(t)


def _iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
