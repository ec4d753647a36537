"""The machine fingerprint: the vectors every client agrees on
(client/testdata/fingerprint_vectors.json; Go's
TestFingerprintAgreesAcrossLanguages runs this client's helper too), and where
the machine id comes from. No server needed."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import seatd
from seatd import fingerprint as fp

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "fingerprint_vectors.json")

IOREG = """+-o J316sAP  <class IOPlatformExpertDevice, id 0x100000112, registered, matched, active, busy 0 (0 ms), retain 37>
    {
      "IOPlatformSerialNumber" = "C02XXXXXXXXX"
      "IOPlatformUUID" = "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F"
    }
"""


def _not_asked():
    raise AssertionError("not asked")


class FingerprintTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="seatd-py-fp-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def file(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(content)
        return path

    def test_vectors_from_the_override_and_from_a_file(self):
        with open(VECTORS) as f:
            vectors = json.load(f)["vectors"]
        self.assertGreaterEqual(len(vectors), 5)
        old = os.environ.get(seatd.MACHINE_ID_ENV)
        self.addCleanup(lambda: os.environ.pop(seatd.MACHINE_ID_ENV, None) if old is None
                        else os.environ.__setitem__(seatd.MACHINE_ID_ENV, old))
        for v in vectors:
            with self.subTest(v=v):
                os.environ[seatd.MACHINE_ID_ENV] = v["machine_id"]
                self.assertEqual(seatd.machine_fingerprint(v["app"]), v["fingerprint"])
                path = self.file("machine-id", v["machine_id"])
                mid = fp._machine_id(environ={}, platform="linux", files=(path,))
                self.assertEqual(fp._fingerprint_of(mid, v["app"]), v["fingerprint"])

    def test_empty_app_and_no_machine_id_are_errors(self):
        with self.assertRaises(ValueError):
            seatd.machine_fingerprint("")
        with self.assertRaises(seatd.NoMachineId) as cm:
            fp._machine_id(environ={}, platform="linux", files=("/nonexistent/machine-id",))
        self.assertIn("SEATD_MACHINE_ID", str(cm.exception))
        self.assertIn("/nonexistent/machine-id", str(cm.exception))

    def test_the_override_wins_and_a_blank_one_is_not_set(self):
        path = self.file("machine-id", "from-the-file\n")
        env = lambda v: {seatd.MACHINE_ID_ENV: v}  # noqa: E731
        self.assertEqual(fp._machine_id(environ=env(" from-the-env\n"), platform="linux", files=(path,)),
                         "from-the-env")
        self.assertEqual(fp._machine_id(environ=env(" \t\n"), platform="linux", files=(path,)), "from-the-file")
        self.assertEqual(fp._machine_id(environ=env("e"), platform="darwin", ioreg=_not_asked), "e")

    def test_linux_reads_etc_first_then_dbus_skipping_blank_or_missing_files(self):
        etc, dbus, blank = self.file("etc", "etc-id\n"), self.file("dbus", "dbus-id\n"), self.file("blank", "\n")
        linux = lambda *files: fp._machine_id(environ={}, platform="linux", files=files)  # noqa: E731
        self.assertEqual(linux(etc, dbus), "etc-id")
        self.assertEqual(linux(blank, dbus), "dbus-id")
        self.assertEqual(linux(os.path.join(self.dir, "missing"), dbus), "dbus-id")
        with self.assertRaisesRegex(seatd.NoMachineId, "is blank"):
            linux(blank)

    def test_macos_ioreg_and_windows_registry(self):
        mac = dict(environ={}, platform="darwin")
        self.assertEqual(fp._machine_id(ioreg=lambda: IOREG, **mac), "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F")
        with self.assertRaises(seatd.NoMachineId):
            fp._machine_id(ioreg=lambda: "{}\n", **mac)

        def missing():
            raise FileNotFoundError("ioreg")
        with self.assertRaisesRegex(seatd.NoMachineId, "ioreg"):
            fp._machine_id(ioreg=missing, **mac)
        self.assertEqual(fp._machine_id(environ={}, platform="win32", registry=lambda: " 5b3a0e4c\r\n"), "5b3a0e4c")

    def test_module_prints_it(self):
        env = dict(os.environ, **{seatd.MACHINE_ID_ENV: "0123456789abcdef0123456789abcdef"})
        root = os.path.dirname(os.path.dirname(os.path.abspath(seatd.__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run([sys.executable, "-m", "seatd.fingerprint", "com.example.cad"], env=env,
                             capture_output=True, text=True, timeout=60, check=True).stdout
        self.assertEqual(out.strip(), "b6ce59c45fac92eebd88cd6147aff326df624d5dcf76df1674987ddedbe6c8c7")
        bad = subprocess.run([sys.executable, "-m", "seatd.fingerprint", ""], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("app", bad.stderr)


if __name__ == "__main__":
    unittest.main()
