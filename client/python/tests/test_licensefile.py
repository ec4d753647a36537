"""The chain vendor → license file → site key → certificate of a seatd in
locked mode, against a fake seatd and files signed here.

The real seatd's chain is checked in test_client.py (EmbeddedTest)."""

import base64
import json
import time
import unittest

from cryptography.hazmat.primitives.asymmetric.rsa import generate_private_key
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

import seatd
from fake import FakeSeatd, Vendor, b64url, certificate, claims, file_terms, site_signer
from test_certificate import FAST, eventually

NAMED = (seatd.LicenseFileInvalid, seatd.LicenseFileExpired, seatd.WrongSiteKey, seatd.WrongLicenseFile,
         seatd.LicenseNotInFile)


def chained_cert(site, serial=1, license="cad", edit=None, deadline=None):
    """A certificate as a locked seatd signs it: the site key's, naming the
    file's serial and license."""
    c = claims("lease-1", "fp", deadline or time.time() + 3600, "n", borrowed=True)
    c.update(license_id="lic_" + license, file_serial=serial, file_license_id=license)
    if edit:
        edit(c)
    return certificate(site, c)


class VendorKeysTest(unittest.TestCase):
    def test_forms(self):
        a, b = Vendor(), Vendor()
        jwk = lambda v: {"kty": "OKP", "crv": "Ed25519", "x": b64url(v.raw)}  # noqa: E731
        for name, data in {"PEM": a.pem(), "two PEM blocks": a.pem() + b.pem(), "JWK": json.dumps(jwk(a)),
                           "JWKS": {"keys": [jwk(a), jwk(b)]}, "bare base64url": b64url(a.raw) + "\n",
                           "padded": base64.urlsafe_b64encode(a.raw).decode()}.items():
            with self.subTest(name):
                self.assertIn(a.kid, seatd.VendorKeys(data).key_ids)

    def test_refused(self):
        a = Vendor()
        rsa = generate_private_key(public_exponent=65537, key_size=1024)
        for name, data in {
            "empty": " \n",
            "RSA": rsa.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo),
            "a private key": a.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()),
            "a private JWK": {"kty": "OKP", "crv": "Ed25519", "x": b64url(a.raw), "d": "x"},
            "PEM cut short": a.pem()[:40],
            "neither": "hello",
            "a 31-byte key": b64url(a.raw[:31]),
            "PEM then other text": a.pem() + b"trailing",
        }.items():
            with self.subTest(name), self.assertRaises(ValueError):
                seatd.VendorKeys(data)


class LicenseFileTest(unittest.TestCase):
    def setUp(self):
        self.vendor, self.site = Vendor(), site_signer()
        self.keys = seatd.VendorKeys(self.vendor.pem())

    def test_verify_license_file(self):
        terms = file_terms(self.site.jwk(), 7)
        terms["a_later_field"] = True  # a client reads only what it needs
        token = self.vendor.token(terms)
        for name, data in {"its JWS": token, "site.lic": self.vendor.file(terms),
                           "with CRLF": self.vendor.file(terms).replace("\n", "\r\n").encode()}.items():
            with self.subTest(name):
                f = self.keys.verify_license_file(data)
                self.assertEqual((7, "Acme", self.site.kid, self.vendor.kid, token),
                                 (f.serial, f.customer, f.site_key_id, f.vendor_key_id, f.token))
                self.assertEqual((seatd.FileLicense("cad", "ACME CAD", ("render",)),), f.licenses)
                self.assertIsNotNone(f.license("lic_cad"))
                self.assertIsNone(f.license("cad"))

    def test_verify_license_file_refuses(self):
        terms = file_terms(self.site.jwk(), 7)
        head, _, sig = self.vendor.token(terms).split(".")
        other_body = self.vendor.token(file_terms(self.site.jwk(), 8)).split(".")[1]

        def edited(edit):
            t = file_terms(self.site.jwk(), 7)
            edit(t)
            return self.vendor.token(t)

        cases = {
            "another vendor's": (Vendor().token(terms), seatd.LicenseFileInvalid),
            "another payload under its signature": (head + "." + other_body + "." + sig, seatd.LicenseFileInvalid),
            "a usage export's typ": (self.vendor.token(terms, "seatd-usage-export-v1"), seatd.LicenseFileInvalid),
            "a lease certificate": (chained_cert(self.site), seatd.LicenseFileInvalid),
            "cut short": (self.vendor.token(terms)[:60], seatd.LicenseFileInvalid),
            "not a JWS": ("hello", seatd.LicenseFileInvalid),
            "a site key of another kid": (edited(lambda t: t["site_key"].update(kid="other")), seatd.LicenseFileInvalid),
            "an RSA site key": (edited(lambda t: t["site_key"].update(kty="RSA")), seatd.LicenseFileInvalid),
            "no serial": (edited(lambda t: t.pop("serial")), seatd.LicenseFileInvalid),
            "past its not_after": (edited(lambda t: t.update(not_after=time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1)))), seatd.LicenseFileExpired),
        }
        for name, (data, want) in cases.items():
            with self.subTest(name):
                with self.assertRaises(want) as ctx:
                    self.keys.verify_license_file(data)
                self.assertIsInstance(ctx.exception, seatd.BadCertificate)
                self.assertEqual([want], [e for e in NAMED if isinstance(ctx.exception, e)], "one link named")

    def test_chain(self):
        f = self.keys.verify_license_file(self.vendor.token(file_terms(self.site.jwk(), 7)))
        c = f.verify(chained_cert(self.site, 7))
        self.assertEqual((7, "cad", "lic_cad", self.site.kid), (c.file_serial, c.file_license_id, c.license_id, c.key_id))
        c.check_holder("key", "fp")
        f.verify(chained_cert(self.site, 7, edit=lambda c: c.update(feature="render")))  # a feature it grants

        stranger = site_signer()
        forged = site_signer()
        forged.kid = self.site.kid
        cases = {
            "signed by a site key the file does not name": (chained_cert(stranger, 7), seatd.WrongSiteKey),
            "another key under the site key's kid": (chained_cert(forged, 7), seatd.WrongSiteKey),
            "another serial": (chained_cert(self.site, 6), seatd.WrongLicenseFile),
            "no serial (not locked mode)": (chained_cert(self.site, 7, edit=lambda c: c.pop("file_serial")),
                                            seatd.WrongLicenseFile),
            "a license the file does not grant": (chained_cert(self.site, 7, "viewer"), seatd.LicenseNotInFile),
            "a file id that is not its license's": (
                chained_cert(self.site, 7, edit=lambda c: c.update(file_license_id="viewer")), seatd.LicenseNotInFile),
            "a feature the file does not grant": (chained_cert(self.site, 7, edit=lambda c: c.update(feature="sim")),
                                                  seatd.LicenseNotInFile),
            "signed after the file's not_after": (
                chained_cert(self.site, 7, edit=lambda c: c.update(iat=int(f.not_after))), seatd.LicenseFileExpired),
        }
        for name, (cert, want) in cases.items():
            with self.subTest(name):
                with self.assertRaises(want):
                    f.verify(cert)
        with self.assertRaises(seatd.LicenseFileExpired):
            f.verify(chained_cert(self.site, 7), now=f.not_after)
        deadline = time.time() + 60
        with self.assertRaises(seatd.CertificateExpired):
            f.verify(chained_cert(self.site, 7, deadline=deadline), now=deadline + 1)

        # The site's returned list verifies with the site key the file names.
        listed = self.site.sign({"iss": "seatd", "tenant_id": "default", "iat": int(time.time()),
                                 "returned": [{"sub": "lease-1", "exp": 1}]},
                                header={"alg": "EdDSA", "kid": self.site.kid, "typ": "seatd-returned+jwt"})
        self.assertTrue(f.signing_keys.verify_returned(listed, "default").names("lease-1"))

    def test_verify_chain_offline(self):
        terms = file_terms(self.site.jwk(), 3)
        cert = chained_cert(self.site, 3)
        for file in (self.vendor.token(terms), self.vendor.file(terms)):
            self.assertEqual(3, seatd.verify_chain_offline(cert, file, self.vendor.pem()).file_serial)
        with self.assertRaises(seatd.LicenseFileInvalid):
            seatd.verify_chain_offline(cert, self.vendor.token(terms), Vendor().pem())
        with self.assertRaises(seatd.WrongSiteKey):
            seatd.verify_chain_offline(chained_cert(site_signer(), 3), self.vendor.token(terms), self.vendor.pem())
        with self.assertRaises(ValueError):
            seatd.verify_chain_offline(cert, self.vendor.token(terms), "not a key")


class VendorKeysClientTest(unittest.TestCase):
    def setUp(self):
        self.vendor, self.site = Vendor(), site_signer()
        self.fake = FakeSeatd(self.site)
        self.fake.locked = dict(file=self.vendor.token(file_terms(self.site.jwk(), 1)), serial=1, license="cad")
        self.addCleanup(self.fake.stop)

    def client(self, **kw):
        c = seatd.Client(self.fake.address, timing=seatd.Timing(**FAST), vendor_keys=self.vendor.pem(), **kw)
        self.addCleanup(c.close)
        return c

    def test_every_answer_chains(self):
        for unary in (False, True):
            with self.subTest(unary=unary):
                self.fake.locked = dict(file=self.vendor.token(file_terms(self.site.jwk(), 1)), serial=1,
                                        license="cad")
                self.fake.file_fetches = 0
                lease = self.client().acquire("key", "fp")
                self.assertEqual(self.fake.locked["file"], lease.license_file)
                if unary:
                    lease._keeper.stop()
                    for _ in range(3):
                        lease.heartbeat()
                else:
                    beats = self.fake.beats
                    eventually(lambda: self.fake.beats >= beats + 3, 5, "stream heartbeats")
                self.assertFalse(lease.lost.is_set(), lease.error)
                self.assertEqual(1, self.fake.file_fetches, "the file is fetched once")

                renewal = self.vendor.token(file_terms(self.site.jwk(), 2))
                with self.fake.mu:
                    self.fake.locked = dict(file=renewal, serial=2, license="cad")
                if unary:
                    lease.heartbeat()
                eventually(lambda: lease.license_file == renewal, 5, "the renewal fetched and named")
                self.assertFalse(lease.lost.is_set(), lease.error)
                self.assertEqual(2, self.fake.file_fetches, "once per serial")
                got = seatd.verify_chain_offline(lease.certificate, lease.license_file, self.vendor.pem())
                self.assertEqual(2, got.file_serial)
                lease.release()

    def test_refused(self):
        stranger = site_signer()
        cases = {
            "a site key the file does not name": (lambda f: setattr(f, "signer", stranger), seatd.WrongSiteKey),
            "a file of another vendor": (lambda f: f.locked.update(file=Vendor().token(file_terms(self.site.jwk(), 1))),
                                         seatd.LicenseFileInvalid),
            "a file for another site key": (
                lambda f: f.locked.update(file=self.vendor.token(file_terms(stranger.jwk(), 1))), seatd.WrongSiteKey),
            "no file (not locked mode)": (lambda f: setattr(f, "locked", None), seatd.LicenseFileInvalid),
            "a file that does not grant the license": (lambda f: f.locked.update(license="viewer"),
                                                       seatd.LicenseNotInFile),
            "certificates naming no file": (lambda f: f.locked.update(serial=0), seatd.WrongLicenseFile),
        }
        for name, (configure, want) in cases.items():
            with self.subTest(name):
                self.fake.signer = self.site
                self.fake.locked = dict(file=self.vendor.token(file_terms(self.site.jwk(), 1)), serial=1,
                                        license="cad")
                configure(self.fake)
                with self.assertRaises(want) as ctx:
                    self.client().acquire("key", "fp")
                self.assertEqual("LEASE_CERTIFICATE_INVALID", ctx.exception.reason)
                self.assertIsInstance(ctx.exception, seatd.LeaseLost)
                self.assertEqual(0, self.fake.live(), "the refused seat is given back")

    def test_a_heartbeat_signed_by_another_site_key(self):
        lease = self.client().acquire("key", "fp")
        beats = self.fake.beats
        eventually(lambda: self.fake.beats >= beats + 2, 5, "heartbeats")
        self.fake.signer = site_signer()
        eventually(lease.lost.is_set, 5, "the lease lost")
        self.assertIsInstance(lease.error, seatd.WrongSiteKey)


if __name__ == "__main__":
    unittest.main()
