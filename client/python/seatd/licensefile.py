"""The chain of trust of a seatd in locked mode: vendor → license file →
site key → lease certificate (docs/concepts/license-files.md).

A vendor signs a license file (a JWS, EdDSA, typ seatd-license-file-v1)
naming the site key of the one seatd that may serve it; that seatd signs
the certificates of the file's licenses with the site key and names the
file's serial and license in them. A product that holds only the vendor's
public key checks its seat without the vendor online: VendorKeys verifies
the file, LicenseFile.verify the certificate against it. Verified with
python3-cryptography, as the certificates are.
"""

import base64
import collections
import datetime
import hashlib
import json
import re
import threading
import time

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

from seatd import errors
from seatd.certificate import SigningKeys, _b64url, _claims, _expect, _iso, _unix

LICENSE_FILE_TYPE = "seatd-license-file-v1"
_SIG_BEGIN, _SIG_END = "-----BEGIN SEATD SIGNATURE-----", "-----END SEATD SIGNATURE-----"
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def key_id(raw):
    """seatd's kid of a 32-byte Ed25519 public key: base64url of the first
    12 bytes of its SHA-256."""
    return base64.urlsafe_b64encode(hashlib.sha256(raw).digest()[:12]).rstrip(b"=").decode()


def _raw(key):
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


class VendorKeys:
    """A vendor's public keys, which sign its license files: vendor.pub as
    seatctl vendor keygen writes it (PEM "PUBLIC KEY" blocks, one or more:
    a vendor that changes its key ships both), a JWK or a JWKS (bytes, str
    or the parsed dict), or one base64url 32-byte key. ValueError for a
    key that is not Ed25519 or a private key, never skipped: a product
    built with the wrong key must say so, not that every file is forged.
    """

    def __init__(self, data):
        keys = _parse_keys(data)
        if not keys:
            raise ValueError("vendor keys: none")
        self._keys = {key_id(_raw(k)): k for k in keys}

    @property
    def key_ids(self):
        return sorted(self._keys)

    def verify_license_file(self, file, now=None):
        """Checks a license file (site.lic's text, or its JWS alone, as
        GetSignedLicenseFile answers it; bytes or str): signed (EdDSA, typ
        seatd-license-file-v1) by the vendor key its kid names, naming an
        Ed25519 site key, and before its not_after at now (Unix seconds or
        a datetime; default time.time()). The readable copy of a site.lic
        is not read: the signed payload is what counts. Returns a
        LicenseFile; raises LicenseFileInvalid or LicenseFileExpired."""
        if isinstance(file, bytes):
            file = file.decode("utf-8", "replace")
        token = _signature_block(file or "")
        parts = token.split(".")
        if len(parts) != 3:
            raise errors.LicenseFileInvalid("not a license file, nor its JWS")
        try:
            header = json.loads(_b64url(parts[0], "header"))
        except (ValueError, errors.BadCertificate):
            raise errors.LicenseFileInvalid("its JWS header is not base64url JSON") from None
        if not isinstance(header, dict) or header.get("alg") != "EdDSA":
            raise errors.LicenseFileInvalid("not signed with EdDSA")
        if header.get("typ") != LICENSE_FILE_TYPE:
            raise errors.LicenseFileInvalid("typ %r, not %r" % (header.get("typ"), LICENSE_FILE_TYPE))
        kid = header.get("kid")
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise errors.LicenseFileInvalid("signed by key %r, none of the vendor's %s" % (kid, self.key_ids))
        try:
            key.verify(_b64url(parts[2], "signature"), (parts[0] + "." + parts[1]).encode("ascii"))
            terms = json.loads(_b64url(parts[1], "payload"))
        except Exception:  # InvalidSignature, a part not base64url or not JSON
            raise errors.LicenseFileInvalid("the signature does not verify with the vendor's key %r" % kid) from None
        return LicenseFile._of(terms, kid, token, now)


def _parse_keys(data):
    if isinstance(data, VendorKeys):
        return list(data._keys.values())
    if isinstance(data, dict):
        return _jwk_keys(data)
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    text = (data or "").strip()
    if not text:
        raise ValueError("vendor keys: empty")
    if text.startswith("-----BEGIN"):
        keys, end = [], 0
        for m in _PEM.finditer(text):
            if text[end:m.start()].strip():
                raise ValueError("vendor keys: text between the PEM blocks")
            if m.group(1) != "PUBLIC KEY":
                raise ValueError("vendor keys: a PEM %r block (want \"PUBLIC KEY\"; is this a private key?)" % m.group(1))
            try:
                key = load_pem_public_key(m.group(0).encode())
            except (ValueError, UnsupportedAlgorithm) as e:
                raise ValueError("vendor keys: %s" % e) from None
            if not isinstance(key, Ed25519PublicKey):
                raise ValueError("vendor keys: a %s, not an Ed25519 key" % type(key).__name__)
            keys.append(key)
            end = m.end()
        if not keys or text[end:].strip():
            raise ValueError("vendor keys: a PEM block is cut short or followed by other text")
        return keys
    if text.startswith("{"):
        try:
            return _jwk_keys(json.loads(text))
        except ValueError as e:
            raise ValueError("vendor keys: not a JWK or JWKS: %s" % e) from None
    try:
        raw = base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != 32:
        raise ValueError("vendor keys: neither PEM, JSON (JWK, JWKS) nor a base64url 32-byte Ed25519 key")
    return [Ed25519PublicKey.from_public_bytes(raw)]


def _jwk_keys(doc):
    jwks = doc.get("keys") if isinstance(doc, dict) and isinstance(doc.get("keys"), list) else [doc]
    keys = []
    for jwk in jwks:
        if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or "d" in jwk:
            raise ValueError("vendor keys: JWK %r is not an Ed25519 public key (or holds a private key)"
                             % (jwk.get("kid") if isinstance(jwk, dict) else None))
        try:
            keys.append(Ed25519PublicKey.from_public_bytes(_b64url(jwk.get("x", ""), "x")))
        except (ValueError, errors.BadCertificate):
            raise ValueError("vendor keys: JWK x is not a 32-byte Ed25519 key") from None
    return keys


def _signature_block(text):
    """The JWS of an armoured document (the lines between its signature
    armour, joined), or text itself, trimmed (a bare JWS)."""
    at = text.find(_SIG_BEGIN)
    if at < 0:
        return text.strip()
    block = text[at + len(_SIG_BEGIN):]
    end = block.find(_SIG_END)
    return "".join((block if end < 0 else block[:end]).split())


def _rfc3339(v, what):
    """Unix seconds of an RFC 3339 time as seatd writes them ("...Z")."""
    if not isinstance(v, str) or not v:
        raise errors.LicenseFileInvalid("no %s" % what)
    try:
        t = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise errors.LicenseFileInvalid("%s %r is not an RFC 3339 time" % (what, v)) from None
    if t.tzinfo is None:
        raise errors.LicenseFileInvalid("%s %r has no time zone" % (what, v))
    return t.timestamp()


# One license a file grants: its id (the vendor's; the seatd license id is
# "lic_" and it), its name, and the features of its grants.
FileLicense = collections.namedtuple("FileLicense", ["id", "name", "features"])


class LicenseFile:
    """A license file the vendor's keys verified (VendorKeys.verify_license_file):
    what the vendor sold the site, and the site key that signs its
    certificates. Times in Unix seconds; token is the file's JWS, to store
    with a borrowed lease's certificate (verify_chain_offline).

    Unlike seatd, which refuses a field it does not know, a client reads
    only what it needs: seatd judges the terms, a product whence its seat
    comes, and keeps working against a later seatd."""

    def __init__(self, serial, customer, issued_at, not_after, site_key_id, vendor_key_id, licenses, token,
                 site_jwk):
        self.serial, self.customer, self.issued_at, self.not_after = serial, customer, issued_at, not_after
        self.site_key_id, self.vendor_key_id, self.licenses, self.token = site_key_id, vendor_key_id, licenses, token
        # The site key as a key set: it verifies the certificates and the
        # site's signed list of returned certificates (verify_returned).
        self.signing_keys = SigningKeys({"keys": [site_jwk]})

    @classmethod
    def _of(cls, terms, vendor_kid, token, now):
        if not isinstance(terms, dict):
            raise errors.LicenseFileInvalid("its terms are not a JSON object")
        serial = terms.get("serial")
        if not isinstance(serial, int) or isinstance(serial, bool) or serial < 1:
            raise errors.LicenseFileInvalid("serial %r" % (serial,))
        site = terms.get("site_key")
        try:
            raw = _b64url(site.get("x", ""), "x") if isinstance(site, dict) else b""
        except errors.BadCertificate:
            raw = b""
        if not isinstance(site, dict) or site.get("kty") != "OKP" or site.get("crv") != "Ed25519" or len(raw) != 32:
            raise errors.LicenseFileInvalid("its site_key is not an Ed25519 public key")
        if site.get("kid") != key_id(raw):
            raise errors.LicenseFileInvalid("its site_key's kid %r is not the kid of its key" % site.get("kid"))
        licenses = []
        for l in terms.get("licenses") or []:
            if not isinstance(l, dict) or not isinstance(l.get("id"), str):
                raise errors.LicenseFileInvalid("a license without an id")
            features = tuple(g.get("feature", "") for g in l.get("grants") or [] if isinstance(g, dict))
            licenses.append(FileLicense(l["id"], l.get("name", ""), features))
        f = cls(serial, terms.get("customer", ""), _rfc3339(terms.get("issued_at"), "issued_at"),
                _rfc3339(terms.get("not_after"), "not_after"), site["kid"], vendor_kid, tuple(licenses), token,
                {"kty": "OKP", "crv": "Ed25519", "x": site["x"], "kid": site["kid"]})
        now = time.time() if now is None else _unix(now)
        if now >= f.not_after:
            raise errors.LicenseFileExpired("serial %d ended at %s (now %s)" % (serial, _iso(f.not_after), _iso(now)))
        return f

    def license(self, license_id):
        """The file's license with the seatd id license_id ("lic_" and the
        file's id), or None."""
        for l in self.licenses:
            if "lic_" + l.id == license_id:
                return l
        return None

    def verify(self, cert, now=None):
        """Checks a stored certificate against the file, the last links of
        the chain: signed by the site key the file names (WrongSiteKey),
        naming the file's serial (WrongLicenseFile), for a license, and a
        feature, the file grants (LicenseNotInFile), signed before the
        file's not_after and checked before it (LicenseFileExpired), not
        expired at now (CertificateExpired). Returns its Claims; the caller
        checks what they must say of it (Claims.check_holder)."""
        now = time.time() if now is None else _unix(now)
        c = self._verify(cert, now)
        if now >= c.expiry:
            raise errors.CertificateExpired("expired at %s (now %s)" % (_iso(c.expiry), _iso(now)))
        return c

    def check(self, cert, *, nonce, lease_id, holder, deadline, license_id="", borrowed=False, now=None,
              grant_id=""):
        """Verifies the certificate of an answer: the chain (verify), and
        what SigningKeys.check asks of it."""
        now = time.time() if now is None else _unix(now)
        c = self._verify(cert, now)
        _expect(c, nonce=nonce, lease_id=lease_id, holder=holder, deadline=deadline, license_id=license_id,
                borrowed=borrowed, now=now, grant_id=grant_id)
        return c

    def _verify(self, cert, now):
        """Every link but the certificate's own expiry."""
        if not cert:
            raise errors.BadCertificate("none in seatd's answer")
        parts = cert.split(".") if isinstance(cert, str) else []
        if len(parts) != 3:
            raise errors.BadCertificate("not a JWS compact token (three base64url parts)")
        try:
            header = json.loads(_b64url(parts[0], "header"))
        except ValueError:
            raise errors.BadCertificate("header is not JSON") from None
        kid = header.get("kid") if isinstance(header, dict) else None
        if kid != self.site_key_id:
            raise errors.WrongSiteKey("signed by key %r, the license file (serial %d) names site key %r"
                                      % (kid, self.serial, self.site_key_id))
        try:
            raw, kid = self.signing_keys._signed(cert)
        except errors.BadCertificate as e:
            raise errors.WrongSiteKey("not signed by the site key %r: %s" % (kid, e.problem)) from None
        c = _claims(raw, kid)
        lic = self.license(c.license_id)
        if not c.file_serial:
            raise errors.WrongLicenseFile("it names no license file (a seatd not in locked mode)")
        if c.file_serial != self.serial:
            raise errors.WrongLicenseFile("it names serial %d, the file is serial %d" % (c.file_serial, self.serial))
        if lic is None or lic.id != c.file_license_id:
            raise errors.LicenseNotInFile("license %r (file id %r) is not in file serial %d"
                                          % (c.license_id, c.file_license_id, self.serial))
        if c.feature and c.feature not in lic.features:
            raise errors.LicenseNotInFile("license %r of file serial %d grants no feature %r"
                                          % (lic.id, self.serial, c.feature))
        if c.issued_at >= self.not_after or now >= self.not_after:
            raise errors.LicenseFileExpired("file serial %d ended at %s (certificate signed %s, now %s)"
                                            % (self.serial, _iso(self.not_after), _iso(c.issued_at), _iso(now)))
        return c


def verify_chain_offline(cert, license_file, vendor_keys, now=None):
    """Checks a stored certificate (a borrowed seat, say) from the vendor's
    public keys alone, without a network: the license file (site.lic, or
    the JWS lease.license_file gave) with VendorKeys(vendor_keys), then the
    certificate against it (LicenseFile.verify). Raises a BadCertificate
    naming the link: LicenseFileInvalid, LicenseFileExpired, WrongSiteKey,
    WrongLicenseFile, LicenseNotInFile, CertificateExpired; ValueError for
    vendor keys that do not parse."""
    keys = vendor_keys if isinstance(vendor_keys, VendorKeys) else VendorKeys(vendor_keys)
    return keys.verify_license_file(license_file, now).verify(cert, now)


class _FileChain:
    """Checks certificates with Client(vendor_keys=...): keeps the license
    file in force, fetched from seatd when it has none or a certificate
    names another serial (a renewal), verified before use."""

    def __init__(self, vendor_keys, fetch):
        self.vendor, self._fetch = vendor_keys, fetch
        self._mu = threading.Lock()
        self.file = None

    def check(self, cert, now=None, **expect):
        """Verifies cert as LicenseFile.check; returns the file it chained to."""
        f = self._file_for(cert, now)
        f.check(cert, now=now, **expect)
        return f

    def _file_for(self, cert, now):
        with self._mu:
            f = self.file
            # A certificate that names no serial is checked against the file
            # kept (and refused): fetching could not help it.
            serial = _unverified_serial(cert)
            if f is not None and serial in (f.serial, 0) and (time.time() if now is None else _unix(now)) < f.not_after:
                return f
            try:
                token = self._fetch()
            except errors.SeatdError as e:
                raise errors.LicenseFileInvalid("the license file could not be fetched from seatd: %s" % e) from None
            self.file = self.vendor.verify_license_file(token, now)
            return self.file


def _unverified_serial(cert):
    """The file_serial a certificate claims (0 if none), read only to decide
    whether to fetch the file again."""
    try:
        v = json.loads(_b64url(cert.split(".")[1], "claims")).get("file_serial", 0)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0
    except Exception:
        return 0
