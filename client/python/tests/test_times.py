"""Every datetime the client returns is timezone-aware, in UTC.

A naive datetime (what protobuf's Timestamp.ToDatetime() gives without a
tzinfo) is taken by Python for local time: compared with an aware one it
raises, and .timestamp() of it is off by the machine's UTC offset.
"""

import datetime
import unittest

import seatd
from fake import FakeSeatd

UTC = datetime.timezone.utc


class LeaseTimesTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSeatd(None, ttl=30.0, interval=60.0)
        self.addCleanup(self.fake.stop)
        self.client = seatd.Client(self.fake.address, auto_heartbeat=False)
        self.addCleanup(self.client.close)

    def deadline(self, lease):
        with self.fake.mu:
            return self.fake.leases[lease.id]["deadline"]

    def assertUTC(self, when, deadline):
        self.assertIsNotNone(when.tzinfo, "a naive datetime")
        self.assertEqual(when.tzinfo, UTC)
        self.assertEqual(when.utcoffset(), datetime.timedelta(0))
        # the instant seatd told, to the microsecond
        self.assertAlmostEqual(when.timestamp(), deadline, delta=1e-5)
        self.assertLess(datetime.datetime.now(UTC), when)

    def test_expires_at_is_utc_on_acquire_and_heartbeat(self):
        lease = self.client.acquire("key", "fp-1")
        self.addCleanup(lease.release)
        self.assertUTC(lease.expires_at, self.deadline(lease))
        before = lease.expires_at
        lease.heartbeat()
        self.assertUTC(lease.expires_at, self.deadline(lease))
        self.assertGreaterEqual(lease.expires_at, before)


if __name__ == "__main__":
    unittest.main()
