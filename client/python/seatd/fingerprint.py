"""A fingerprint of this machine for one application, the same in every seatd
client (Go's client.MachineFingerprint, TypeScript's machineFingerprint).

    fp = seatd.machine_fingerprint("com.example.cad")
    with client.lease(license_key, fp) as lease: ...

It is the lowercase hex of HMAC-SHA256 keyed by the machine id (surrounding
ASCII whitespace trimmed) over the application's name, so one vendor's fingerprint
of a machine cannot be matched with another's. The machine id is
SEATD_MACHINE_ID when set and not blank (containers, CI), else the OS's:
/etc/machine-id, then /var/lib/dbus/machine-id (Linux and other Unix),
IOPlatformUUID (macOS, from ioreg), MachineGuid (Windows, the registry).

`python3 -m seatd.fingerprint APP` prints it. Only the standard library.
"""

import hashlib
import hmac
import os
import re
import subprocess
import sys

MACHINE_ID_ENV = "SEATD_MACHINE_ID"
LINUX_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
# The whitespace trimmed from a machine id: ASCII's, as in every client (C's
# isspace), so that they agree on any input.
_SPACE = " \t\n\r\v\f"


class NoMachineId(Exception):
    """No machine id: SEATD_MACHINE_ID is not set (or blank) and the OS has
    none this process can read."""


def machine_fingerprint(app):
    """The fingerprint of this machine for app (the application's own name,
    e.g. "com.example.cad"): pass it as the fingerprint of acquire, lease,
    borrow or wait_for_seat. Raises ValueError for an empty app, NoMachineId
    when there is no machine id."""
    if not isinstance(app, str) or not app:
        raise ValueError("machine_fingerprint: app (the application's name) is empty")
    return _fingerprint_of(_machine_id(), app)


def _fingerprint_of(machine_id, app):
    return hmac.new(machine_id.strip(_SPACE).encode("utf-8", "surrogateescape"), app.encode(), hashlib.sha256).hexdigest()


def _machine_id(environ=None, platform=None, files=LINUX_MACHINE_ID_FILES, ioreg=None, registry=None):
    """The machine id, trimmed and not blank; the arguments are for tests."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    override = (environ.get(MACHINE_ID_ENV) or "").strip(_SPACE)
    if override:
        return override
    error = None
    machine_id = ""
    try:
        if platform == "darwin":
            where = "IOPlatformUUID"
            machine_id = _ioreg_platform_uuid((ioreg or _run_ioreg)())
        elif platform == "win32":
            where = r"MachineGuid (HKLM\SOFTWARE\Microsoft\Cryptography)"
            machine_id = (registry or _windows_machine_guid)()
        else:
            where = " or ".join(files)
            for path in files:
                try:
                    with open(path, "rb") as f:
                        machine_id = f.read(4096).decode("utf-8", "surrogateescape").strip(_SPACE)
                except OSError as e:
                    error = e
                    continue
                if machine_id:
                    break
    except (OSError, subprocess.SubprocessError) as e:
        error = e
    machine_id = (machine_id or "").strip(_SPACE)
    if machine_id:
        return machine_id
    if error is not None:
        raise NoMachineId("no machine id: %s is not set and %s has none (%s)" % (MACHINE_ID_ENV, where, error))
    raise NoMachineId("no machine id: %s is not set and %s is blank" % (MACHINE_ID_ENV, where))


_IOREG_UUID = re.compile(r'"IOPlatformUUID"\s*=\s*"([^"]*)"')


def _ioreg_platform_uuid(output):
    m = _IOREG_UUID.search(output)
    return m.group(1) if m else ""


def _run_ioreg():
    return subprocess.run(["/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice"], check=True,
                          capture_output=True, text=True, timeout=30).stdout


def _windows_machine_guid():
    import winreg  # Windows only
    with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SOFTWARE\Microsoft\Cryptography", 0,
                        winreg.KEY_READ | winreg.KEY_WOW64_64KEY) as key:
        value, _ = winreg.QueryValueEx(key, "MachineGuid")
        return str(value)


def _main(argv):
    if len(argv) != 2:
        print("usage: python3 -m seatd.fingerprint APP", file=sys.stderr)
        return 2
    try:
        print(machine_fingerprint(argv[1]))
    except (ValueError, NoMachineId) as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
