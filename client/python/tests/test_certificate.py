"""Lease certificates against a fake seatd with keys of the test's own.

The real seatd's certificates are checked in test_client.py (Base).
"""

import json
import time
import unittest

import seatd
from fake import FORGERIES, FakeSeatd, Signer, certificate, claims, jwks

FAST = dict(clock_check=0.05, backoff_base=0.02, backoff_max=0.2, reconnect_jitter=0.05, min_interval=0.05,
            last_chance=1.0, call_timeout=5.0)


def eventually(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("not within %ss: %s" % (timeout, what))


class FakeServerTest(unittest.TestCase):
    def setUp(self):
        self.signer = Signer("k1")
        self.fake = FakeSeatd(self.signer)
        self.addCleanup(self.fake.stop)

    def client(self, verify=True, **kw):
        c = seatd.Client(self.fake.address, timing=seatd.Timing(**FAST),
                         signing_keys=jwks(self.signer) if verify else None, **kw)
        self.addCleanup(c.close)
        return c

    def assertBad(self, err):
        self.assertIsInstance(err, seatd.BadCertificate)
        self.assertIsInstance(err, seatd.LeaseLost, "a bad certificate is a lost lease")
        self.assertEqual("LEASE_CERTIFICATE_INVALID", err.reason)
        self.assertTrue(err.problem)

    def test_verified_lease_is_kept(self):
        for unary in (False, True):
            with self.subTest(unary=unary):
                c = self.client()
                lease = c.acquire("key", "fp")
                first = lease.certificate
                self.assertTrue(first)
                if unary:
                    lease._keeper.stop()
                    for _ in range(3):
                        lease.heartbeat()
                else:
                    beats = self.fake.beats
                    eventually(lambda: self.fake.beats >= beats + 3, 5, "stream heartbeats")
                    eventually(lambda: lease.certificate != first, 5, "each answer's certificate is kept")
                self.assertFalse(lease.lost.is_set(), lease.error)
                got = seatd.verify_offline(lease.certificate, jwks(self.signer))
                self.assertEqual((lease.id, "fp", "lic-1", "k1", False),
                                 (got.lease_id, got.fingerprint, got.license_id, got.key_id, got.borrowed))
                self.assertEqual(22, len(got.nonce), "16 random bytes, base64url")
                lease.release()

    def test_acquire_refuses_a_bad_certificate(self):
        for forge in FORGERIES:
            with self.subTest(forge=forge):
                self.fake.forge = forge
                with self.assertRaises(seatd.BadCertificate) as ctx:
                    self.client().acquire("key", "fp")
                self.assertBad(ctx.exception)
                self.assertEqual(0, self.fake.live(), "the refused seat is given back")

    def test_server_without_certificates(self):
        self.fake.signer = None
        with self.assertRaises(seatd.BadCertificate):
            self.client().acquire("key", "fp")
        lease = self.client(verify=False).acquire("key", "fp")  # unchecked: fine
        self.assertEqual("", lease.certificate)
        lease.release()

    def test_bad_certificate_on_the_stream_loses_the_lease(self):
        for forge in ("missing", "other key", "other nonce", "later exp", "one byte changed"):
            with self.subTest(forge=forge):
                self.fake.forge = None
                lease = self.client().acquire("key", "fp")
                beats = self.fake.beats
                eventually(lambda: self.fake.beats >= beats + 2, 5, "heartbeats")
                self.fake.forge = forge
                self.assertTrue(lease.lost.wait(5), "lease not reported lost")
                self.assertBad(lease.error)
                eventually(lambda: self.fake.live() == 0, 5, "the seat given back")
                lease.release()  # nothing left to release

    def test_unary_heartbeat_checks(self):
        c = self.client(auto_heartbeat=False)
        lease = c.acquire("key", "fp")
        lease.heartbeat()
        self.fake.forge = "other nonce"
        with self.assertRaises(seatd.BadCertificate):
            lease.heartbeat()
        self.assertTrue(lease.lost.is_set())

    def test_not_acquired_again(self):
        c = self.client(reacquire_on_expiry=True)
        lease = c.acquire("key", "fp")
        self.fake.forge = "other key"
        self.assertTrue(lease.lost.wait(5))
        self.assertBad(lease.error)
        self.assertEqual(1, len(self.fake.leases), "an untrusted server gets no second acquisition")

    def test_wait_for_seat_checks_the_grant(self):
        lease = self.client().wait_for_seat("key", "fp")
        self.assertTrue(lease.certificate)
        lease.release()
        self.fake.forge = "unknown kid"
        with self.assertRaises(seatd.BadCertificate):
            self.client().wait_for_seat("key", "fp", timeout=5)
        self.assertEqual(0, self.fake.live())

    def test_borrow(self):
        c = self.client()
        lease = c.borrow("key", "laptop", 72 * 3600)
        self.assertTrue(lease.borrowed)
        self.assertIsNone(lease._keeper, "a borrowed lease needs no heartbeats")
        keys = jwks(self.signer)
        got = seatd.verify_offline(lease.certificate, keys, time.time() + 71 * 3600)
        self.assertTrue(got.borrowed)
        self.assertEqual(("laptop", "lic-1", lease.id), (got.fingerprint, got.license_id, got.lease_id))
        with self.assertRaises(seatd.CertificateExpired):
            seatd.verify_offline(lease.certificate, keys, got.expiry)
        c.release_seat(lease.id, lease.token)  # returned early, after a restart
        self.assertEqual(0, self.fake.live())

    def test_borrow_refuses_what_it_could_not_store(self):
        self.fake.lend = False
        with self.assertRaises(seatd.BadCertificate):
            self.client(verify=False).borrow("key", "laptop", 3600)
        self.assertEqual(0, self.fake.live())
        self.fake.lend, self.fake.signer = True, None
        with self.assertRaises(seatd.BadCertificate):
            self.client(verify=False).borrow("key", "laptop", 3600)
        self.assertEqual(0, self.fake.live())

    def test_nonce_only_when_verifying(self):
        """With signing_keys every request carries a fresh nonce (acquire,
        every heartbeat on the stream and unary, the wait), so every answer
        brings a certificate to check. Without, requests carry none, and the
        fake (signing as seatd does) signs nothing for them; but a borrow
        always gets a certificate, and its request carries a nonce for the
        certificate to repeat."""
        for verify in (False, True):
            with self.subTest(verify=verify):
                self.fake.nonces = {}
                c = self.client(verify=verify)
                lease = c.acquire("key", "fp")
                beats = self.fake.beats
                eventually(lambda: self.fake.beats >= beats + 2, 5, "stream heartbeats")
                lease.heartbeat()  # unary
                waited = c.wait_for_seat("key", "fp-2", timeout=5)
                self.assertFalse(lease.lost.is_set(), lease.error)
                self.assertEqual(verify, bool(lease.certificate), "no nonce, no certificate")
                self.assertEqual(verify, bool(waited.certificate), "no nonce, no certificate")
                waited.release()
                lease.release()

                seen, sent = self.fake.seen_nonces(), set()
                for rpc in ("acquire", "stream", "heartbeat", "wait"):
                    self.assertTrue(seen.get(rpc), "no %s request seen" % rpc)
                    for n in seen[rpc]:
                        if not verify:
                            self.assertEqual("", n, "a %s request without signing_keys carries no nonce" % rpc)
                            continue
                        self.assertEqual(22, len(n), "%s: 16 random bytes, base64url" % rpc)
                        self.assertNotIn(n, sent, "%s: a nonce sent twice" % rpc)
                        sent.add(n)

                # A borrow sends a nonce, checked or not, and its certificate repeats it.
                borrowed = c.borrow("key", "laptop", 3600)
                nonce = self.fake.seen_nonces()["acquire"][-1]
                self.assertEqual(22, len(nonce))
                self.assertNotIn(nonce, sent, "a fresh nonce")
                self.assertEqual(nonce, seatd.verify_offline(borrowed.certificate, jwks(self.signer)).nonce)
                c.release_seat(borrowed.id, borrowed.token)

    def test_fetch_signing_keys(self):
        got = json.loads(self.client(verify=False).fetch_signing_keys())
        self.assertEqual({"keys": [self.signer.jwk()]}, got)
        self.assertEqual(["k1"], seatd.SigningKeys(got).key_ids)


class VerifyOfflineTest(unittest.TestCase):
    def test_verify_offline(self):
        signer, other = Signer("k1"), Signer("k2")
        deadline = time.time() + 3600
        good = certificate(signer, claims("lease-1", "fp", deadline, "n", borrowed=True))
        got = seatd.verify_offline(good, jwks(signer))
        self.assertEqual(seatd.Claims(issuer="seatd", lease_id="lease-1", tenant_id="default", license_id="lic-1",
                                      fingerprint="fp", user="", hostname="", bound_to="fingerprint",
                                      license_key_sha256=seatd.license_key_hash("key"), issued_at=got.issued_at,
                                      expiry=int(deadline), borrowed=True, nonce="n", key_id="k1"), got)
        got.check_holder("key", "fp")
        seatd.verify_offline(good, jwks(signer, other))  # after a rotation, more keys
        with self.assertRaises(seatd.BadCertificate):
            seatd.verify_offline(good, jwks(other))  # another tenant's keys
        for forge in ("other key", "unknown kid", "one byte changed", "alg none", "missing"):
            with self.subTest(forge=forge), self.assertRaises(seatd.BadCertificate):
                seatd.verify_offline(certificate(signer, claims("lease-1", "fp", deadline, "n"), forge), jwks(signer))
        for junk in ("x", "a.b.c", good + "x", good[:-2], good.replace(".", ".=", 1)):
            with self.subTest(junk=junk), self.assertRaises(seatd.BadCertificate):
                seatd.verify_offline(junk, jwks(signer))
        with self.assertRaises(seatd.CertificateExpired):
            seatd.verify_offline(good, jwks(signer), int(deadline))
        seatd.verify_offline(good, jwks(signer), int(deadline) - 0.001)

    def test_check_holder(self):
        # A certificate is this client's only when it names the hash of the
        # license key it uses and its own identity, the one its lease is
        # bound to; an older seatd's (neither claim) still verifies offline.
        signer = Signer("k1")
        deadline = time.time() + 3600

        def claims_of(forge):
            return seatd.verify_offline(certificate(signer, claims("lease-1", "fp", deadline, "n"), forge),
                                        jwks(signer))
        me = dict(license_key="key", fingerprint="fp", user="ann", hostname="box")
        claims_of(None).check_holder(**me)
        for forge in ("relayed", "other fingerprint", "other license key", "unbound", "other user"):
            with self.subTest(forge=forge), self.assertRaises(seatd.BadCertificate):
                claims_of(forge).check_holder(**me)
        with self.assertRaises(seatd.BadCertificate):
            claims_of(None).check_holder("another-key", "fp")
        shared = claims_of("other user")  # bound to user bob, fingerprint fp
        shared.check_holder("key", "bobs-laptop", user="bob")
        with self.assertRaises(seatd.BadCertificate):
            shared.check_holder("key", "fp")  # no user sent
        by_host = shared._replace(bound_to="hostname", hostname="box")
        by_host.check_holder(**me)
        with self.assertRaises(seatd.BadCertificate):
            by_host.check_holder("key", "fp", user="bob", hostname="other-box")
        with self.assertRaises(seatd.BadCertificate):
            shared._replace(bound_to="group").check_holder(**me)

    def test_signing_keys(self):
        signer = Signer("k1")
        self.assertEqual(["k1"], seatd.SigningKeys(jwks(signer)).key_ids)
        private = dict(signer.jwk(), d="nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
        for bad in (b"{", b'{"keys": []}', json.dumps({"keys": [{"kty": "RSA", "kid": "r"}]}),
                    json.dumps({"keys": [private]}), json.dumps({"keys": [signer.jwk(), signer.jwk()]}),
                    json.dumps({"keys": [dict(signer.jwk(), x="short")]})):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                seatd.SigningKeys(bad)
        mixed = {"keys": [{"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"}, signer.jwk()]}
        self.assertEqual(["k1"], seatd.SigningKeys(mixed).key_ids)


if __name__ == "__main__":
    unittest.main()


def returned_list(signer, lease_ids, iat=None, typ="seatd-returned+jwt", **over):
    body = {"iss": "seatd", "tenant_id": "default", "iat": int(time.time() if iat is None else iat),
            "returned": [{"sub": i, "exp": int(time.time()) + 3600} for i in lease_ids]}
    body.update(over)
    return signer.sign(body, header={"alg": "EdDSA", "kid": signer.kid, "typ": typ})


class ReturnedListTest(unittest.TestCase):
    """The signed list of returned certificates: a listed certificate is
    refused offline; the list is taken only as seatd signed it."""

    def setUp(self):
        self.signer = Signer("k1")
        self.keys = seatd.SigningKeys(jwks(self.signer))
        self.cert = certificate(self.signer, claims("lease-1", "fp", time.time() + 3600, "n", borrowed=True))

    def test_listed_certificate_is_refused(self):
        listed = returned_list(self.signer, ["lease-1", "lease-9"])
        with self.assertRaises(seatd.CertificateReturned) as cm:
            seatd.verify_offline(self.cert, jwks(self.signer), returned=listed)
        self.assertIsInstance(cm.exception, seatd.BadCertificate)
        self.assertTrue(cm.exception.returned)
        seatd.verify_offline(self.cert, jwks(self.signer), returned=returned_list(self.signer, ["lease-2"]))
        seatd.verify_offline(self.cert, jwks(self.signer), returned=returned_list(self.signer, []))
        seatd.verify_offline(self.cert, jwks(self.signer), returned=None)

    def test_tampering_is_refused(self):
        good = returned_list(self.signer, ["lease-1"])
        got = self.keys.verify_returned(good, "default", max_age=60)
        self.assertTrue(got.names("lease-1"))
        self.assertEqual(good, got.token)
        head, body, sig = good.split(".")
        bad = {
            "one byte changed": head + "." + body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + sig,
            "other key": returned_list(Signer("k1"), ["lease-1"]),
            "unknown kid": returned_list(Signer("k9"), ["lease-1"]),
            "typ of a certificate": returned_list(self.signer, ["lease-1"], typ="JWT"),
            "other issuer": returned_list(self.signer, ["lease-1"], iss="evil"),
            "other tenant": returned_list(self.signer, ["lease-1"], tenant_id="acme"),
            "replayed": returned_list(self.signer, ["lease-1"], iat=time.time() - 7200),
            "from later": returned_list(self.signer, ["lease-1"], iat=time.time() + 3600),
            "not a JWS": "a.b.c",
        }
        for what, token in bad.items():
            with self.subTest(what=what), self.assertRaises(seatd.BadCertificate):
                self.keys.verify_returned(token, "default", max_age=60)
        self.keys.verify_returned(bad["replayed"], "default")  # offline: the newest kept
        with self.assertRaises(seatd.BadCertificate):
            self.keys.verify(good)  # a list is never a lease certificate

    def test_newer_keeps_the_latest(self):
        older = self.keys.verify_returned(returned_list(self.signer, [], iat=time.time() - 3600), "default")
        newer = self.keys.verify_returned(returned_list(self.signer, ["lease-1"]), "default")
        self.assertIs(newer, seatd.newer(None, newer))
        self.assertIs(newer, seatd.newer(older, newer))
        self.assertIs(newer, seatd.newer(newer, older))
        self.assertIs(older, seatd.newer(older, None))
