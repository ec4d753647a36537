"""The seatd package the tests import is a complete install.

make test/python installs the wheel into a fresh venv and runs these tests
from outside the source tree with SEATD_PY_INSTALLED=1: the import must then
come from the venv, not from client/python (which would hide a file the
wheel forgot).
"""

import importlib
import os
import sys
import unittest

import seatd

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


class PackageTest(unittest.TestCase):
    def test_generated_modules_and_stubs_are_there(self):
        for mod in ("seatd.v1.resources_pb2", "seatd.v1.seat_service_pb2_grpc", "seatd.v1.admin_service_pb2_grpc",
                    "seatd.v1.heartbeat_service_pb2_grpc", "seatd._rpc.google.rpc.status_pb2",
                    "seatd._rpc.google.rpc.error_details_pb2", "seatd.certificate", "seatd.errors"):
            importlib.import_module(mod)
        v1 = os.path.join(os.path.dirname(seatd.__file__), "v1")
        for stub in ("resources_pb2.pyi", "seat_service_pb2.pyi", "heartbeat_service_pb2.pyi",
                     "admin_service_pb2.pyi"):
            self.assertTrue(os.path.exists(os.path.join(v1, stub)), stub + " is missing")

    def test_import_comes_from_the_install(self):
        where = os.path.abspath(seatd.__file__)
        if os.environ.get("SEATD_PY_INSTALLED") == "1":
            self.assertFalse(where.startswith(SOURCE + os.sep), "seatd imported from the source tree: " + where)
            self.assertTrue(where.startswith(os.path.abspath(sys.prefix) + os.sep),
                            "seatd imported from %s, not the venv %s" % (where, sys.prefix))
            self.assertNotEqual(sys.prefix, sys.base_prefix, "not in a venv")
        else:
            self.assertTrue(where.startswith(SOURCE + os.sep), "seatd imported from " + where)


if __name__ == "__main__":
    unittest.main()
