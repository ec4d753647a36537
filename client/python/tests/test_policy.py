"""A license's site policy as the client meets it, against a fake seatd:
its refusals as typed errors (NoSeat for those that pass as leases end,
NotAllowed for the others), and wait_for_seat polling through the first.
The real seatd's are in test_client.py (Base, test_site_policy_refusals)."""

import unittest

import grpc

import seatd
from fake import FakeSeatd, Signer
from test_certificate import FAST

EXHAUSTED, DENIED = grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.PERMISSION_DENIED
CAP = {"in_use": "1", "limit": "1", "rule": "1", "subject_kind": "user", "subject_name": "bob"}


class PolicyFakeTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSeatd(Signer("k1"))
        self.addCleanup(self.fake.stop)
        self.client = seatd.Client(self.fake.address, timing=seatd.Timing(**FAST))
        self.addCleanup(self.client.close)

    def test_refusals_are_typed(self):
        """Each reason raises its exception: the caps and SEATS_RESERVED are
        NoSeat (as SEATS_EXHAUSTED), with the rule and figures; EXCLUDED and
        NOT_INCLUDED are NotAllowed. They used to be plain SeatdErrors."""
        for reason, code, cls, no_seat in [
            ("USER_LIMIT", EXHAUSTED, seatd.UserLimit, True),
            ("HOST_LIMIT", EXHAUSTED, seatd.HostLimit, True),
            ("GROUP_LIMIT", EXHAUSTED, seatd.GroupLimit, True),
            ("SEATS_RESERVED", EXHAUSTED, seatd.SeatsReserved, True),
            ("EXCLUDED", DENIED, seatd.Excluded, False),
            ("NOT_INCLUDED", DENIED, seatd.NotIncluded, False),
        ]:
            with self.subTest(reason=reason):
                self.fake.refusals = [(code, reason, dict(CAP, feature="render"))]
                with self.assertRaises(cls) as cm:
                    self.client.acquire("key", "fp", user="bob", feature="render")
                e = cm.exception
                self.assertEqual((reason, code), (e.reason, e.code))
                self.assertEqual(no_seat, isinstance(e, seatd.NoSeat))
                self.assertEqual(not no_seat, isinstance(e, seatd.NotAllowed))
                self.assertNotIsInstance(e, seatd.SeatsExhausted)
                self.assertEqual((1, "user", "bob", "render"), (e.rule, e.subject_kind, e.subject_name, e.feature))
                if no_seat:
                    self.assertEqual((1, 1), (e.in_use, e.limit))
        self.assertTrue(issubclass(seatd.SeatsExhausted, seatd.NoSeat))
        self.assertEqual(0, self.fake.live())

    def test_wait_for_seat_polls_through_a_cap(self):
        """Polling (a seatd without the queue), the caps and SEATS_RESERVED
        are no seat for now: the wait goes on, at position 0, until a seat
        is granted. It used to raise at the first."""
        self.fake.queue = False
        self.fake.refusals = [(EXHAUSTED, "USER_LIMIT", CAP), (EXHAUSTED, "SEATS_RESERVED", {}),
                              (EXHAUSTED, "GROUP_LIMIT", {}), (EXHAUSTED, "SEATS_EXHAUSTED", {})]
        positions = []
        lease = self.client.wait_for_seat("key", "fp", user="bob", on_position=lambda p, n: positions.append((p, n)),
                                          timeout=30)
        self.assertEqual(5, self.fake.acquires, "four refusals, then the seat")
        self.assertIn((0, 0), positions)
        lease.release()

    def test_wait_for_seat_polling_ends_when_excluded(self):
        """Polling, EXCLUDED and NOT_INCLUDED raise at once: no seat that
        frees would be this client's."""
        self.fake.queue = False
        for reason, cls in [("EXCLUDED", seatd.Excluded), ("NOT_INCLUDED", seatd.NotIncluded)]:
            with self.subTest(reason=reason):
                self.fake.acquires = 0
                self.fake.refusals = [(DENIED, reason, {})]
                with self.assertRaises(cls):
                    self.client.wait_for_seat("key", "fp", user="intern", timeout=30)
                self.assertEqual(1, self.fake.acquires)


if __name__ == "__main__":
    unittest.main()
