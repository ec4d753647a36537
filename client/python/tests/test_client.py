"""The Python client against real seatd binaries, embedded and distributed.

Run from client/python: /usr/bin/python3 -m unittest -v (make test/python).
"""

import base64
import datetime
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc
from google.protobuf import duration_pb2

import seatd
from seatd.v1 import resources_pb2
from harness import OPERATOR_KEY, REPO, Backend, Gate, Seatd, seatd_bin
from fake import Vendor, file_terms, site_signer

# Shrunk delays so that each behaviour shows within seconds.
FAST = dict(clock_check=0.1, backoff_base=0.05, backoff_max=0.5, reconnect_jitter=0.2, min_interval=0.2,
            last_chance=1.0, call_timeout=5.0)
ACTIVE = resources_pb2.LEASE_STATE_ACTIVE


def eventually(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("not within %ss: %s" % (timeout, what))


class Base:
    """The behaviours; EmbeddedTest and DistributedTest run them in each mode."""

    distributed = False

    def setUp(self):
        self.backend = Backend() if self.distributed else None
        self.servers = []
        self.server = self.start("a")
        self.admin = seatd.AdminClient(self.server.address, key=OPERATOR_KEY)
        self.addCleanup(self.admin.close)

    def tearDown(self):
        for s in self.servers:
            s.stop()
            s.cleanup()
        if self.backend:
            self.backend.drop()

    def start(self, name, args=()):
        extra = self.backend.args(name) if self.backend else []
        s = Seatd(extra + list(args))
        self.servers.append(s)
        return s

    def client(self, address=None, gate=None, **kw):
        address = address or self.server.address
        timing = seatd.Timing(**FAST)
        if gate is None:
            c = seatd.Client(address, timing=timing, **kw)
        else:
            opts = [("grpc.service_config", seatd.SERVICE_CONFIG), ("grpc.enable_retries", 1)]
            channel = grpc.intercept_channel(grpc.insecure_channel(address, options=opts), gate)
            c = seatd.Client(channel=channel, timing=timing, **kw)
            self.addCleanup(channel.close)
        self.addCleanup(c.close)
        return c

    def license(self, seats=1, ttl=2.0, **fields):
        return self.admin.create_license("py-test", seats=seats, lease_ttl=ttl, **fields)

    def active(self, lic):
        leases = self.admin.list_leases(license_id=lic.id, state=ACTIVE).leases
        return [l.id for l in leases]

    def grant(self, lic, feature, version="", seats=1, expires_in=None):
        """A feature grant on lic; expires_in (seconds from now, whole
        seconds) sets its expires_at."""
        g = resources_pb2.FeatureGrant(feature=feature, version=version, seats=seats)
        if expires_in is not None:
            g.expires_at.FromSeconds(int(time.time() + expires_in))
        return self.admin.create_feature_grant(license_id=lic.id, grant=g).grant

    # ---- the behaviour table ----

    def test_acquire_heartbeat_release(self):
        """acquire: a seat with id, token and the server's interval; a heartbeat
        moves the deadline; leaving the with block releases the seat."""
        lic = self.license(seats=1, ttl=30)
        c = self.client()
        with c.lease(lic.key, "fp-1") as lease:
            self.assertTrue(lease.id.startswith("lse_"))
            self.assertTrue(lease.token)
            self.assertEqual((lease.seats_in_use, lease.seat_limit), (1, 1))
            self.assertAlmostEqual(lease.heartbeat_interval, 5.0, delta=0.01)  # TTL/6
            before = lease.expires_at
            self.assertEqual(before.utcoffset(), datetime.timedelta(0), "expires_at is aware, in UTC")
            now = datetime.datetime.now(datetime.timezone.utc)
            self.assertLess(abs((before - now).total_seconds() - 30), 10, "expires_at is the TTL from now")
            time.sleep(0.01)
            lease.heartbeat()
            self.assertGreater(lease.expires_at, before)
            self.assertEqual(lease.expires_at.tzinfo, datetime.timezone.utc)
            self.assertEqual(self.active(lic), [lease.id])
        self.assertEqual(self.active(lic), [])
        self.assertFalse(lease.lost.is_set(), "our own release is not a loss")
        lease.release()  # idempotent
        with c.lease(lic.key, "fp-2"):
            pass  # the seat is free again

    def test_auto_heartbeat_survives_3x_ttl(self):
        """auto-heartbeat: with a 2 s TTL the background stream keeps the lease
        for 3 x TTL; the server still lists it active."""
        lic = self.license(seats=1, ttl=2)
        gate = Gate()
        c = self.client(gate=gate)
        with c.lease(lic.key, "fp-1") as lease:
            time.sleep(6.5)
            self.assertFalse(lease.lost.is_set(), lease.error)
            self.assertEqual(self.active(lic), [lease.id])
            self.assertGreaterEqual(gate.calls.get("HeartbeatStream", 0), 1)
            self.assertEqual(gate.calls.get("Heartbeat", 0), 0, "the stream did the beating")
            lease.heartbeat()

    def test_stream_fallback_to_unary(self):
        """stream fallback: when HeartbeatStream is UNIMPLEMENTED the keeper
        heartbeats with unary calls and the lease survives 3 x TTL."""
        lic = self.license(seats=1, ttl=2)
        gate = Gate()
        gate.no_stream = True
        c = self.client(gate=gate)
        with c.lease(lic.key, "fp-1") as lease:
            time.sleep(6.5)
            self.assertFalse(lease.lost.is_set(), lease.error)
            self.assertEqual(self.active(lic), [lease.id])
            self.assertGreaterEqual(gate.calls.get("Heartbeat", 0), 6)

    def test_revoke_fires_lost_within_one_interval(self):
        """lost signal: an operator revokes the lease; lease.lost is set within
        one heartbeat interval, with reason LEASE_REVOKED."""
        lic = self.license(seats=1, ttl=6)  # interval 1 s
        c = self.client()
        with c.lease(lic.key, "fp-1") as lease:
            time.sleep(0.5)  # the stream is open
            began = time.time()
            self.admin.revoke_lease(lease_id=lease.id, reason="test")
            self.assertTrue(lease.lost.wait(lease.heartbeat_interval), "lost not set within one interval")
            took = time.time() - began
            self.assertEqual(lease.reason, "LEASE_REVOKED")
            self.assertIsInstance(lease.error, seatd.LeaseRevoked)
            self.assertLess(took, lease.heartbeat_interval)

    def test_reacquire_after_sleep_past_deadline(self):
        """re-acquire after sleep: nothing reaches the server for 2 x TTL (as from
        a suspended laptop), the server expires the lease; with
        reacquire_on_expiry the keeper notices the passed deadline by the wall
        clock and acquires again (new id and token), lost stays clear. Without
        it, lost fires with LEASE_EXPIRED."""
        lic = self.license(seats=2, ttl=2)
        gate = Gate()
        c = self.client(gate=gate, reacquire_on_expiry=True)
        plain = self.client(gate=gate)
        with c.lease(lic.key, "fp-1") as lease, plain.lease(lic.key, "fp-2") as other:
            old = lease.id
            gate.down_until = time.time() + 4.5
            self.assertTrue(other.lost.wait(8), "the lease without reacquire is lost")
            self.assertIsInstance(other.error, seatd.LeaseExpired)
            eventually(lambda: lease.id != old, 10, "acquired again")
            self.assertFalse(lease.lost.is_set(), lease.error)
            eventually(lambda: self.active(lic) == [lease.id], 5, "the new lease is the only active one")
            time.sleep(2.5)  # and it is kept alive
            self.assertEqual(self.active(lic), [lease.id])

    def test_full_license_raises_seats_exhausted(self):
        """errors: a full license raises SeatsExhausted with in_use/limit."""
        lic = self.license(seats=1, ttl=30)
        c = self.client()
        with c.lease(lic.key, "fp-1"):
            with self.assertRaises(seatd.SeatsExhausted) as cm:
                c.acquire(lic.key, "fp-2")
            e = cm.exception
            self.assertEqual((e.in_use, e.limit), (1, 1))
            self.assertEqual(e.reason, "SEATS_EXHAUSTED")
            self.assertEqual(e.code, grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_typed_errors(self):
        """errors: ErrorInfo reasons map to exceptions (LicenseNotFound,
        InvalidArgument with the field, LeaseExpired on a late heartbeat,
        Unauthenticated for a wrong operator key)."""
        c = self.client(auto_heartbeat=False)
        with self.assertRaises(seatd.LicenseNotFound):
            c.acquire("slk_does_not_exist", "fp-1")
        lic = self.license(seats=1, ttl=1)
        with self.assertRaises(seatd.InvalidArgument) as cm:
            c.acquire(lic.key, "")
        self.assertIn("fingerprint", [f for f, _ in cm.exception.field_violations])
        lease = c.acquire(lic.key, "fp-1")
        time.sleep(1.3)
        with self.assertRaises(seatd.LeaseExpired):
            lease.heartbeat()
        self.assertTrue(lease.lost.is_set())
        with seatd.AdminClient(self.server.address, key="wrong-key") as bad:
            with self.assertRaises(seatd.Unauthenticated):
                bad.list_licenses()

    def test_retry_reuses_idempotency_key(self):
        """retries: the server grants a seat but the reply is lost; the retry
        sends the same idempotency key and gets the same lease, so a
        one-lease-per-acquisition license still has one seat taken."""
        lic = self.license(seats=3, ttl=30,
                           leasing_strategy=resources_pb2.LEASING_STRATEGY_PER_ACQUISITION)
        gate = Gate()
        gate.drop_acquire_replies = 1
        c = self.client(gate=gate)
        with c.lease(lic.key, "fp-1") as lease:
            keys = [r.idempotency_key for r in gate.requests["AcquireSeat"]]
            self.assertEqual(len(keys), 2)
            self.assertEqual(keys[0], keys[1])
            self.assertEqual(self.active(lic), [lease.id])
        with c.lease(lic.key, "fp-1") as a, c.lease(lic.key, "fp-1") as b:
            self.assertNotEqual(a.id, b.id, "each logical acquisition has a key of its own")

    def test_wait_for_seat_gets_released_seat(self):
        """wait: wait_for_seat queues (position 1 of 1, with a ticket) and gets
        the seat when the holder releases it."""
        lic = self.license(seats=1, ttl=30)
        c = self.client()
        holder = c.acquire(lic.key, "holder")
        positions, got = [], {}

        def wait():
            got["lease"] = c.wait_for_seat(lic.key, "waiter", on_position=lambda p, n: positions.append((p, n)),
                                           timeout=30)
        t = threading.Thread(target=wait)
        t.start()
        eventually(lambda: positions, 10, "a queue position")
        self.assertEqual(positions[0], (1, 1))
        self.assertNotIn("lease", got)
        holder.release()
        t.join(15)
        lease = got["lease"]
        self.assertEqual(self.active(lic), [lease.id])
        self.assertFalse(lease.lost.is_set())
        lease.release()

    def test_wait_for_seat_timeout(self):
        """wait: wait_for_seat raises TimeoutError when no seat frees in time."""
        lic = self.license(seats=1, ttl=30)
        c = self.client()
        with c.lease(lic.key, "holder"):
            with self.assertRaises(TimeoutError):
                c.wait_for_seat(lic.key, "waiter", timeout=1)

    def test_feature_at_a_version(self):
        """features: a license with base seats and two grants of "render"
        (2024 expiring soon, 2025 later): a request both cover (2023.4)
        takes the one expiring first, a 2025 request the newer; the lease says its feature, version,
        grant and the grant's expiry; one machine's base and render seats are
        two leases, and asking for render again hands its render lease back;
        with both grants full SeatsExhausted names the feature."""
        lic = self.license(seats=1, ttl=30)
        r2024 = self.grant(lic, "render", "2024", expires_in=86400)
        r2025 = self.grant(lic, "render", "2025", expires_in=365 * 86400)
        c = self.client(auto_heartbeat=False)
        base = c.acquire(lic.key, "fp-1")
        self.assertEqual(("", "", "", None), (base.feature, base.version, base.grant_id, base.grant_expires_at))
        old = c.acquire(lic.key, "fp-1", feature="render", version="2023.4")
        self.assertNotEqual(base.id, old.id, "base and render seats of one machine are two leases")
        self.assertEqual(("render", "2023.4", r2024.id, lic.id),
                         (old.feature, old.version, old.grant_id, old.license_id))
        self.assertEqual(r2024.expires_at.ToDatetime(tzinfo=datetime.timezone.utc), old.grant_expires_at)
        self.assertEqual((old.seats_in_use, old.seat_limit), (1, 1), "the grant's")
        new = c.acquire(lic.key, "fp-2", feature="render", version="2025")
        self.assertEqual((new.grant_id, new.version), (r2025.id, "2025"))
        self.assertEqual(r2025.expires_at.ToDatetime(tzinfo=datetime.timezone.utc), new.grant_expires_at)
        again = c.acquire(lic.key, "fp-1", feature="render", version="2023.4")
        self.assertEqual(old.id, again.id, "dedupe is per feature")
        with self.assertRaises(seatd.SeatsExhausted) as cm:
            c.acquire(lic.key, "fp-3", feature="render", version="2024")
        e = cm.exception
        self.assertEqual(("SEATS_EXHAUSTED", "render", 2, 2), (e.reason, e.feature, e.in_use, e.limit))
        self.assertEqual(sorted(self.active(lic)), sorted([base.id, old.id, new.id]))
        for lease in (base, again, new):
            lease.release()

    def test_feature_not_licensed(self):
        """features: a version no grant covers raises VersionNotLicensed
        (reason VERSION_NOT_LICENSED, the feature, the version asked and the
        highest licensed); a feature the license holds no grant of raises
        FeatureNotLicensed (FEATURE_NOT_LICENSED), wait_for_seat too, at
        once; nothing is taken."""
        lic = self.license(seats=1, ttl=30)
        self.grant(lic, "render", "2024", expires_in=86400)
        self.grant(lic, "render", "2025")
        self.grant(lic, "sim")
        c = self.client()
        with self.assertRaises(seatd.VersionNotLicensed) as cm:
            c.acquire(lic.key, "fp-1", feature="render", version="2026")
        e = cm.exception
        self.assertEqual(("VERSION_NOT_LICENSED", grpc.StatusCode.FAILED_PRECONDITION),
                         (e.reason, e.code))
        self.assertEqual(("render", "2026", "2025"), (e.feature, e.version, e.highest_version))
        self.assertIn("render", e.message)
        for call in (lambda: c.acquire(lic.key, "fp-1", feature="cad-export"),
                     lambda: c.wait_for_seat(lic.key, "fp-1", feature="cad-export", timeout=30)):
            with self.assertRaises(seatd.FeatureNotLicensed) as cm:
                call()
            e = cm.exception
            self.assertNotIsInstance(e, seatd.VersionNotLicensed)
            self.assertEqual(("FEATURE_NOT_LICENSED", grpc.StatusCode.FAILED_PRECONDITION, "cad-export"),
                             (e.reason, e.code, e.feature))
        with c.lease(lic.key, "fp-1", feature="sim", version="7.3") as lease:  # any version of sim
            self.assertEqual(("sim", "7.3"), (lease.feature, lease.version))
        self.assertEqual(self.active(lic), [])

    def test_wait_for_seat_of_a_feature(self):
        """features: wait_for_seat(feature=...) queues for the feature's
        grant (the free base seat is not taken) and gets its seat when the
        holder releases it."""
        lic = self.license(seats=1, ttl=30)
        render = self.grant(lic, "render", "2025")
        c = self.client()
        holder = c.acquire(lic.key, "holder", feature="render", version="2025")
        positions, got = [], {}
        t = threading.Thread(target=lambda: got.update(lease=c.wait_for_seat(
            lic.key, "waiter", feature="render", version="2024.2",
            on_position=lambda p, n: positions.append((p, n)), timeout=30)))
        t.start()
        eventually(lambda: positions, 10, "a queue position")
        self.assertEqual(positions[0], (1, 1))
        holder.release()
        t.join(15)
        lease = got["lease"]
        self.assertEqual(("render", "2024.2", render.id), (lease.feature, lease.version, lease.grant_id))
        self.assertEqual(self.active(lic), [lease.id])
        lease.release()

    def test_feature_certificate_claims(self):
        """features: the certificate of a lease of a grant carries feature,
        version, grant_id and grant_expires_at, verified by the client at
        acquire and at every heartbeat (it must name the feature and version
        asked for); a base lease's carries none."""
        jwks = self.jwks()
        lic = self.license(seats=1, ttl=2)  # a heartbeat every 1/3 s
        render = self.grant(lic, "render", "2025", expires_in=86400)
        c = self.client(signing_keys=jwks)
        with c.lease(lic.key, "fp-1", feature="render", version="2024.3") as lease:
            got = seatd.verify_offline(lease.certificate, jwks)
            self.assertEqual(("render", "2024.3", render.id, render.expires_at.seconds),
                             (got.feature, got.version, got.grant_id, got.grant_expires_at))
            self.assertEqual((got.lease_id, got.license_id), (lease.id, lic.id))
            got.check_holder(lic.key, "fp-1", feature="render", version="2024.3")
            with self.assertRaises(seatd.BadCertificate):
                got.check_holder(lic.key, "fp-1")  # no base seat
            first = lease.certificate
            eventually(lambda: lease.certificate != first, 5, "a verified heartbeat's certificate")
            self.assertEqual(seatd.verify_offline(lease.certificate, jwks).grant_id, render.id)
            time.sleep(1)
            self.assertFalse(lease.lost.is_set(), lease.error)
        with c.lease(lic.key, "fp-1") as base:
            got = seatd.verify_offline(base.certificate, jwks)
            self.assertEqual(("", "", "", 0), (got.feature, got.version, got.grant_id, got.grant_expires_at))

    def jwks(self, tenant="default"):
        """The tenant's JWKS as a vendor fetches it at build time (REST, no key)."""
        with urllib.request.urlopen("http://%s/v1/tenants/%s/jwks.json" % (self.server.http, tenant)) as r:
            return r.read()

    def test_certificates_verified(self):
        """certificates: with the JWKS from /v1/tenants/default/jwks.json every
        answer is verified (acquire, stream heartbeats, wait grant); another
        tenant's JWKS refuses seatd's answers (BadCertificate) and the seat
        is given back."""
        jwks = self.jwks()
        self.assertEqual(sorted(k["kid"] for k in json.loads(jwks)["keys"]),
                         seatd.SigningKeys(self.client().fetch_signing_keys()).key_ids)
        lic = self.license(seats=2, ttl=2)  # a heartbeat every 1/3 s
        c = self.client(signing_keys=jwks)
        with c.lease(lic.key, "fp-1") as lease:
            got = seatd.verify_offline(lease.certificate, jwks)
            self.assertEqual((got.lease_id, got.license_id, got.fingerprint, got.tenant_id, got.borrowed),
                             (lease.id, lic.id, "fp-1", "default", False))
            first = lease.certificate
            eventually(lambda: lease.certificate != first, 5, "a verified heartbeat's certificate")
            time.sleep(1)
            self.assertFalse(lease.lost.is_set(), lease.error)
            waiter = {}
            holder = c.acquire(lic.key, "holder")
            t = threading.Thread(target=lambda: waiter.update(lease=c.wait_for_seat(lic.key, "waiter", timeout=30)))
            t.start()
            holder.release()
            t.join(15)
            seatd.verify_offline(waiter["lease"].certificate, jwks)
            waiter["lease"].release()
        self.admin.create_tenant(tenant=resources_pb2.Tenant(id="py-other", name="other"))
        wrong = self.client(signing_keys=self.jwks("py-other"))
        with self.assertRaises(seatd.BadCertificate) as cm:
            wrong.acquire(lic.key, "fp-2")
        self.assertEqual(cm.exception.reason, "LEASE_CERTIFICATE_INVALID")
        self.assertEqual(self.active(lic), [], "the refused seat was given back")

    def test_borrow(self):
        """borrowing: borrow returns a lease with a certificate verify_offline
        accepts until its deadline; it can be neither revoked nor returned
        early (release_seat); a license without borrowing refuses."""
        jwks = self.jwks()
        lic = self.license(seats=2, ttl=30, max_borrow_duration=duration_pb2.Duration(seconds=3600),
                           max_borrowed_seats=1)
        c = self.client(signing_keys=jwks)
        lease = c.borrow(lic.key, "travel-laptop", 1800)
        self.assertTrue(lease.borrowed)
        got = seatd.verify_offline(lease.certificate, jwks, time.time() + 1700)
        self.assertTrue(got.borrowed)
        self.assertEqual((got.fingerprint, got.license_id), ("travel-laptop", lic.id))
        got.check_holder(lic.key, "travel-laptop")  # bound to this machine and this license key
        with self.assertRaises(seatd.BadCertificate):
            got.check_holder(lic.key, "another-laptop")  # copied to another machine
        with self.assertRaises(seatd.CertificateExpired):
            seatd.verify_offline(lease.certificate, jwks, got.expiry)
        with self.assertRaises(seatd.SeatdError) as cm:
            c.borrow(lic.key, "second-laptop", 60)
        self.assertEqual(cm.exception.reason, "BORROW_LIMIT_REACHED")
        with self.assertRaises(seatd.SeatdError) as cm:
            self.admin.revoke_lease(lease_id=lease.id, reason="test")
        self.assertEqual(cm.exception.reason, "LEASE_BORROWED")
        self.assertEqual(self.active(lic), [lease.id], "the borrowed lease keeps its seat")
        with self.assertRaises(seatd.SeatdError) as cm:
            c.release_seat(lease.id, lease.token)  # no early return: the certificate stays valid offline
        self.assertEqual(cm.exception.reason, "LEASE_BORROWED")
        self.assertEqual(self.active(lic), [lease.id], "the borrowed lease keeps its seat until its deadline")
        plain = self.license(seats=1, ttl=30)
        with self.assertRaises(seatd.SeatdError) as cm:
            c.borrow(plain.key, "x", 60)
        self.assertEqual(cm.exception.reason, "BORROW_NOT_ALLOWED")


class EmbeddedTest(Base, unittest.TestCase):
    distributed = False

    def test_tls(self):
        """TLS: Client(address, tls=<CA PEM>) acquires, heartbeats over the
        stream and releases against seatd serving TLS."""
        d = tempfile.mkdtemp(prefix="seatd-py-tls-")
        crt, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", key, "-out", crt, "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
        s = self.start("tls", ["--tls-cert-file", crt, "--tls-key-file", key])
        with open(crt, "rb") as f:
            pem = f.read()
        with seatd.AdminClient(s.address, key=OPERATOR_KEY, tls=pem) as admin:
            lic = admin.create_license("tls", seats=1, lease_ttl=2)
        with seatd.Client(s.address, tls=pem, timing=seatd.Timing(**FAST)) as c:
            with c.lease(lic.key, "fp-1") as lease:
                time.sleep(3)
                self.assertFalse(lease.lost.is_set(), lease.error)
        with seatd.Client(s.address, timing=seatd.Timing(**FAST)) as plain:
            with self.assertRaises(seatd.SeatdError):
                plain.acquire(lic.key, "fp-2", timeout=2)

    def test_site_policy_refusals(self):
        """site policy (embedded: distributed mode keeps none yet): seatd's
        refusals raise their exceptions with the rule's metadata: a cap and
        a reservation are NoSeat (retry later), an exclusion NotAllowed."""
        lic = self.license(seats=3, ttl=30)
        self.admin.put_group(group=resources_pb2.IdentityGroup(
            name="night", kind=resources_pb2.IdentityGroup.KIND_USERS, members=["alice"]))
        subject = resources_pb2.PolicySubject
        rule = resources_pb2.PolicyRule
        self.admin.set_license_policy(license_id=lic.id, policy=resources_pb2.LicensePolicy(rules=[
            rule(kind=rule.KIND_RESERVE, count=1, subject=subject(kind=subject.KIND_GROUP, name="night")),
            rule(kind=rule.KIND_MAX, count=1, subject=subject(kind=subject.KIND_USER, name="bob")),
            rule(kind=rule.KIND_EXCLUDE, subject=subject(kind=subject.KIND_USER, name="intern")),
        ]))
        c = self.client()
        with c.lease(lic.key, "b1", user="bob"), c.lease(lic.key, "d1", user="dave"):
            with self.assertRaises(seatd.UserLimit) as cm:
                c.acquire(lic.key, "b2", user="bob")
            e = cm.exception
            self.assertIsInstance(e, seatd.NoSeat)
            self.assertEqual((1, "user", "bob", 1, 1), (e.rule, e.subject_kind, e.subject_name, e.in_use, e.limit))
            with self.assertRaises(seatd.SeatsReserved) as cm:
                c.acquire(lic.key, "e1", user="erin")
            self.assertEqual((0, "night"), (cm.exception.rule, cm.exception.subject_name))
            with self.assertRaises(seatd.Excluded) as cm:
                c.acquire(lic.key, "i1", user="intern")
            self.assertIsInstance(cm.exception, seatd.NotAllowed)
            self.assertEqual((grpc.StatusCode.PERMISSION_DENIED, 2), (cm.exception.code, cm.exception.rule))

    def test_locked_mode_chain(self):
        """locked mode: a seatd serving a license file signed here (the
        vendor's key, python3-cryptography) for its site key (seatd
        site-id) signs its certificates with the site key; a client with
        vendor_keys checks each through the file it fetches, the lease
        names that file, verify_chain_offline checks both from vendor.pub
        alone, and refuses the certificate against a file for another site
        key (WrongSiteKey); a renewal (SIGHUP) is fetched and checked."""
        d = tempfile.mkdtemp(prefix="seatd-py-locked-")
        data_dir, req = os.path.join(d, "data"), os.path.join(d, "request.txt")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEATD_")}
        subprocess.run([seatd_bin(), "site-id", "--data-dir", data_dir, "--name", "py plant", "-o", req],
                       check=True, capture_output=True, env=env)
        with open(req) as f:
            body = f.read().split("-----BEGIN SEATD SIGNATURE-----")[1].split("-----END")[0]
        token = "".join(body.split())
        payload = token.split(".")[1]
        site = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["site_key"]
        vendor = Vendor()
        vendor_pub, site_lic = os.path.join(d, "vendor.pub"), os.path.join(d, "site.lic")
        with open(vendor_pub, "wb") as f:
            f.write(vendor.pem())
        first = vendor.file(file_terms(site, 1, seats=2))
        with open(site_lic, "w") as f:
            f.write(first)
        s = Seatd(["--license-file", site_lic, "--vendor-key", vendor_pub, "--license-file-watch-interval", "1h"],
                  data_dir=data_dir)
        self.servers.append(s)
        with seatd.AdminClient(s.address, key=OPERATOR_KEY) as admin:
            key = admin.get_license(license_id="lic_cad").license.key

        c = self.client(address=s.address, auto_heartbeat=False, vendor_keys=vendor.pem())
        lease = c.acquire(key, "fp-1")
        signed = "".join(first.split("-----BEGIN SEATD SIGNATURE-----")[1].split("-----END")[0].split())
        self.assertEqual(signed, lease.license_file, "the file in force's JWS")
        got = seatd.verify_chain_offline(lease.certificate, first, vendor.pem())
        self.assertEqual((1, "cad", "lic_cad", site["kid"]),
                         (got.file_serial, got.file_license_id, got.license_id, got.key_id))
        got.check_holder(key, "fp-1")
        self.assertEqual(1, seatd.verify_chain_offline(lease.certificate, lease.license_file, vendor.pem()).file_serial)
        with self.assertRaises(seatd.WrongSiteKey):
            seatd.verify_chain_offline(lease.certificate, vendor.file(file_terms(site_signer().jwk(), 1)), vendor.pem())
        with urllib.request.urlopen("http://%s/v1/license-file.jws" % s.http) as r:
            self.assertEqual(lease.license_file, json.loads(r.read()))

        with open(site_lic, "w") as f:
            f.write(vendor.file(file_terms(site, 2, seats=3)))
        s.proc.send_signal(signal.SIGHUP)
        with seatd.AdminClient(s.address, key=OPERATOR_KEY) as admin:
            eventually(lambda: admin.get_license_file().license_file.serial == 2, 10, "serial 2 in force")
        lease.heartbeat()
        self.assertEqual(2, seatd.verify_chain_offline(lease.certificate, lease.license_file, vendor.pem()).file_serial)
        lease.release()

    def test_service_config_matches_go(self):
        """retries: the retry policy is the Go client's service_config.json."""
        with open(os.path.join(REPO, "client", "service_config.json")) as f:
            self.assertEqual(json.loads(seatd.SERVICE_CONFIG), json.load(f))


class DistributedTest(Base, unittest.TestCase):
    distributed = True

    def test_sigterm_reconnects_to_other_instance(self):
        """auto-heartbeat across instances: of two instances on one backend,
        the one the stream is on gets SIGTERM; the stream is told to
        reconnect, moves to the other one, and the lease survives 2 x TTL
        more without being lost."""
        other = self.start("b")
        lic = self.license(seats=1, ttl=2)
        gate = Gate()
        timing = seatd.Timing(**FAST)
        opts = [("grpc.service_config", seatd.SERVICE_CONFIG), ("grpc.enable_retries", 1),
                ("grpc.lb_policy_name", "pick_first")]
        target = "ipv4:%s,%s" % (self.server.address, other.address)  # the first one first
        channel = grpc.intercept_channel(grpc.insecure_channel(target, options=opts), gate)
        self.addCleanup(channel.close)
        with seatd.Client(channel=channel, timing=timing) as c:
            with c.lease(lic.key, "fp-1") as lease:
                time.sleep(1.5)
                streams = gate.calls.get("HeartbeatStream", 0)
                self.assertGreaterEqual(streams, 1)
                self.assertEqual(self.server.stop(signal.SIGTERM), 0)
                time.sleep(4.5)
                self.assertFalse(lease.lost.is_set(), lease.error)
                self.assertGreater(gate.calls.get("HeartbeatStream", 0), streams, "a new stream")
                with seatd.AdminClient(other.address, key=OPERATOR_KEY) as admin:
                    leases = admin.list_leases(license_id=lic.id, state=ACTIVE).leases
                    self.assertEqual([l.id for l in leases], [lease.id])
                lease.heartbeat()


if __name__ == "__main__":
    unittest.main()
