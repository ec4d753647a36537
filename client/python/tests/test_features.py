"""Features and versions against a fake seatd: what the client sends, what a
lease and its certificate say, refusals as typed errors, and the answers it
must not trust. The real seatd's are in test_client.py (Base, test_feature_*).
"""

import datetime
import time
import unittest

import grpc

import seatd
from fake import FEATURE_FORGERIES, GRANT_EXPIRES_AT, GRANT_ID, GRANT_VERSION, FakeSeatd, Signer, certificate, claims, jwks
from test_certificate import FAST, eventually

UTC = datetime.timezone.utc


class FeatureFakeTest(unittest.TestCase):
    def setUp(self):
        self.signer = Signer("k1")
        self.fake = FakeSeatd(self.signer)
        self.addCleanup(self.fake.stop)

    def client(self, verify=True, **kw):
        c = seatd.Client(self.fake.address, timing=seatd.Timing(**FAST),
                         signing_keys=jwks(self.signer) if verify else None, **kw)
        self.addCleanup(c.close)
        return c

    def test_lease_of_a_feature(self):
        """The lease says its feature, the version asked, its grant and the
        grant's expiry; heartbeats go on verifying the certificate's feature."""
        for verify in (True, False):
            with self.subTest(verify=verify):
                lease = self.client(verify).acquire("key", "fp", feature="render", version="2025.1")
                self.assertEqual(("render", "2025.1", GRANT_ID), (lease.feature, lease.version, lease.grant_id))
                self.assertEqual(datetime.datetime.fromtimestamp(GRANT_EXPIRES_AT, UTC), lease.grant_expires_at)
                self.assertEqual(UTC, lease.grant_expires_at.tzinfo)
                beats = self.fake.beats
                eventually(lambda: self.fake.beats >= beats + 3, 5, "stream heartbeats")
                self.assertFalse(lease.lost.is_set(), lease.error)
                lease.release()

    def test_base_lease_has_no_feature(self):
        lease = self.client().acquire("key", "fp")
        self.assertEqual(("", "", "", None), (lease.feature, lease.version, lease.grant_id, lease.grant_expires_at))
        c = seatd.verify_offline(lease.certificate, jwks(self.signer))
        self.assertEqual(("", "", "", 0), (c.feature, c.version, c.grant_id, c.grant_expires_at))
        lease.release()

    def test_certificate_claims(self):
        """verify_offline exposes feature, version, grant_id,
        grant_expires_at (Unix seconds) and grant_version; check_holder
        refuses another feature, or a version the grant does not cover."""
        lease = self.client().acquire("key", "fp", feature="render", version="2025.1")
        c = seatd.verify_offline(lease.certificate, jwks(self.signer))
        self.assertEqual(("render", "2025.1", GRANT_ID, GRANT_EXPIRES_AT, GRANT_VERSION),
                         (c.feature, c.version, c.grant_id, c.grant_expires_at, c.grant_version))
        # The seat covers any version up to the grant's: a lease handed back
        # to a request for another version it covers is still this client's.
        for covered in ("2025.1", "2024", "2030", "2030.0", ""):
            c.check_holder("key", "fp", feature="render", version=covered)
        for other in (dict(), dict(feature="sim", version="2025.1"), dict(feature="render", version="2030.1")):
            with self.assertRaises(seatd.BadCertificate, msg=other):
                c.check_holder("key", "fp", **other)  # a seat of another module, or past the grant, unlocks nothing
        lease.release()

    def test_request_carries_feature_and_version(self):
        """acquire, wait_for_seat and borrow send feature and version; a
        reacquisition after an expiry asks for the same feature again."""
        c = self.client(verify=False, reacquire_on_expiry=True)
        for lease in (c.acquire("key", "fp", feature="render", version="2024"),
                      c.wait_for_seat("key", "fp", feature="render", version="2024", timeout=5),
                      c.borrow("key", "fp", 60, feature="render", version="2024")):
            self.assertEqual(("render", "2024"), (lease.feature, lease.version))
            lease.release()
        lease = c.acquire("key", "fp", feature="sim")
        old = lease.id
        with self.fake.mu:
            self.fake.leases[old].update(live=False, expired=True)
        eventually(lambda: lease.id != old, 5, "acquired again")
        self.assertEqual(("sim", GRANT_ID), (lease.feature, lease.grant_id))
        self.assertEqual("sim", self.fake.leases[lease.id]["feature"])
        lease.release()

    def test_refusals_are_typed(self):
        """FEATURE_NOT_LICENSED, VERSION_NOT_LICENSED and GRANT_NOT_STARTED
        raise their exceptions, with the reason and what the metadata says;
        wait_for_seat raises them at once rather than waiting."""
        c = self.client(verify=False)
        self.fake.refuse = ("FEATURE_NOT_LICENSED", {"feature": "sim"})
        with self.assertRaises(seatd.FeatureNotLicensed) as cm:
            c.acquire("key", "fp", feature="sim")
        e = cm.exception
        self.assertNotIsInstance(e, seatd.VersionNotLicensed)
        self.assertEqual(("FEATURE_NOT_LICENSED", grpc.StatusCode.FAILED_PRECONDITION, "sim"),
                         (e.reason, e.code, e.feature))
        with self.assertRaises(seatd.FeatureNotLicensed):
            c.wait_for_seat("key", "fp", feature="sim", timeout=5)

        self.fake.refuse = ("VERSION_NOT_LICENSED", {"feature": "render", "version": "2026",
                                                     "highest_version": "2025"})
        with self.assertRaises(seatd.VersionNotLicensed) as cm:
            c.acquire("key", "fp", feature="render", version="2026")
        e = cm.exception
        self.assertIsInstance(e, seatd.FeatureNotLicensed, "not licensed at that version is not licensed")
        self.assertEqual(("VERSION_NOT_LICENSED", "render", "2026", "2025"),
                         (e.reason, e.feature, e.version, e.highest_version))

        self.fake.refuse = ("GRANT_NOT_STARTED", {"feature": "render", "starts_at": "2030-01-01T00:00:00Z"})
        with self.assertRaises(seatd.GrantNotStarted) as cm:
            c.acquire("key", "fp", feature="render")
        self.assertEqual(("GRANT_NOT_STARTED", "render", datetime.datetime(2030, 1, 1, tzinfo=UTC)),
                         (cm.exception.reason, cm.exception.feature, cm.exception.starts_at))
        self.assertEqual(0, self.fake.live())

    def test_a_seatd_without_features_is_refused(self):
        """A seatd from before features ignores the feature and grants a
        base seat: the client refuses it and gives the seat back, with or
        without certificates."""
        self.fake.features = False
        for verify in (True, False):
            with self.subTest(verify=verify):
                with self.assertRaises(seatd.SeatdError) as cm:
                    self.client(verify).acquire("key", "fp", feature="render")
                self.assertEqual(grpc.StatusCode.UNIMPLEMENTED, cm.exception.code)
                self.assertIn("render", cm.exception.message)
                self.assertEqual(0, self.fake.live(), "the base seat is given back")
        lease = self.client().acquire("key", "fp")  # the base pool is fine
        lease.release()

    def test_certificate_of_another_feature_is_refused(self):
        """A certificate must name the feature and version this client asked
        for and the grant the answer names: a base seat's certificate (a
        relay's), another feature's, another version's or grant's is a
        BadCertificate at acquire and on the stream."""
        for forge in FEATURE_FORGERIES:
            with self.subTest(forge=forge, at="acquire"):
                self.fake.forge = forge
                with self.assertRaises(seatd.BadCertificate):
                    self.client().acquire("key", "fp", feature="render", version="2025")
                self.assertEqual(0, self.fake.live(), "the refused seat is given back")
            with self.subTest(forge=forge, at="stream"):
                self.fake.forge = None
                lease = self.client().acquire("key", "fp", feature="render", version="2025")
                self.fake.forge = forge
                self.assertTrue(lease.lost.wait(5), "lease not reported lost")
                self.assertIsInstance(lease.error, seatd.BadCertificate)
                eventually(lambda: self.fake.live() == 0, 5, "the seat given back")

    def test_claims_of_a_grant_must_be_well_formed(self):
        keys = seatd.SigningKeys(jwks(self.signer))
        c = claims("lease-1", "fp", time.time() + 60, "n", feature="render", version="1")
        c["grant_expires_at"] = "2030-01-01"
        with self.assertRaises(seatd.BadCertificate):
            keys.verify(certificate(self.signer, c))
        c["grant_expires_at"], c["feature"] = GRANT_EXPIRES_AT, 7
        with self.assertRaises(seatd.BadCertificate):
            keys.verify(certificate(self.signer, c))

    def test_claims_by_position(self):
        """Claims built by position before features still build; the new
        fields default to a base lease's."""
        c = seatd.Claims("seatd", "l", "t", "lic", "fp", "", "", "fingerprint", "h", 1, 2, False, "n", "k1")
        self.assertEqual(("", "", "", 0), (c.feature, c.version, c.grant_id, c.grant_expires_at))


if __name__ == "__main__":
    unittest.main()


class CompareVersionsTest(unittest.TestCase):
    def test_numbers_component_by_component(self):
        """As seatd compares them: 1.9 < 1.10, 3 == 3.0 == 03, 3.0.1 > 3."""
        from seatd.certificate import compare_versions
        for a, b, want in (("1.9", "1.10", -1), ("3", "3.0", 0), ("03", "3", 0), ("3.0.1", "3", 1),
                           ("2024.2", "2024.10", -1), ("99999999999999999999", "99999999999999999998", 1)):
            self.assertEqual(want, compare_versions(a, b), (a, b))
            self.assertEqual(-want, compare_versions(b, a), (b, a))
