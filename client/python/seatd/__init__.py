"""Python client of seatd, the floating-license seat server.

    import seatd
    client = seatd.Client("127.0.0.1:7070")
    with client.lease(license_key, fingerprint) as lease:
        ...  # heartbeated in the background; lease.lost is set if the seat is lost

client.lease(license_key, fingerprint, feature="render", version="2025.1")
takes a seat of a feature grant (a module of the product) that covers that
version; FeatureNotLicensed / VersionNotLicensed say it is not licensed.

Client(..., signing_keys=jwks) verifies the lease certificate of every
answer; seatd.verify_offline(cert, jwks) checks a stored one (a borrowed
seat) without a network, and refuses it when the signed list of returned
certificates it is given names it (verify_offline(cert, jwks, returned=list)).

Client(..., vendor_keys=vendor_pub) checks every certificate of a seatd in
locked mode from the vendor's public key instead: vendor → license file →
site key → certificate; lease.license_file is the file it chained to, and
seatd.verify_chain_offline(cert, license_file, vendor_pub) checks both
without a network (WrongSiteKey, WrongLicenseFile, LicenseNotInFile,
LicenseFileInvalid, LicenseFileExpired name the link that failed).

seatd.machine_fingerprint("com.example.cad") is a fingerprint of this machine
for that application, the same as the Go and TypeScript clients compute
(SEATD_MACHINE_ID overrides the OS's machine id: containers, CI); pass it as
the fingerprint.

The generated gRPC modules are seatd.v1.*_pb2 / *_pb2_grpc; the google.rpc
error details seatd sends are decoded into the exceptions of seatd.errors.
"""

from seatd.certificate import Claims, ReturnedList, SigningKeys, license_key_hash, newer, verify_offline
from seatd.client import AdminClient, Client, Lease, Timing, SERVICE_CONFIG
from seatd.fingerprint import MACHINE_ID_ENV, NoMachineId, machine_fingerprint
from seatd.licensefile import FileLicense, LicenseFile, VendorKeys, verify_chain_offline
from seatd.errors import (
    SeatdError, SeatsExhausted, LeaseLost, LeaseExpired, LeaseRevoked, LeaseReleased, LeaseNotFound,
    LeaseTokenInvalid, LicenseNotFound, LicenseInactive, LicenseExpired, InvalidArgument, Unauthenticated,
    PermissionDenied, QueueFull, RateLimited, Unavailable, BadCertificate, CertificateExpired,
    CertificateReturned, FeatureNotLicensed, VersionNotLicensed, GrantNotStarted, GrantNotFound, NoSeat,
    PolicyLimit, SeatsReserved, UserLimit, HostLimit, GroupLimit, NotAllowed, Excluded, NotIncluded,
    LicenseFileInvalid, LicenseFileExpired, WrongSiteKey, WrongLicenseFile, LicenseNotInFile,
)
from seatd.v1.resources_pb2 import FeatureGrant, License, Lease as LeaseRecord, LeaseState, LeasingStrategy

__all__ = [
    "AdminClient", "Client", "Lease", "Timing", "SERVICE_CONFIG", "License", "LeaseRecord", "LeaseState",
    "LeasingStrategy", "SeatdError", "SeatsExhausted", "LeaseLost", "LeaseExpired", "LeaseRevoked",
    "LeaseReleased", "LeaseNotFound", "LeaseTokenInvalid", "LicenseNotFound", "LicenseInactive",
    "LicenseExpired", "InvalidArgument", "Unauthenticated", "PermissionDenied", "QueueFull", "RateLimited",
    "Unavailable", "BadCertificate", "CertificateExpired", "Claims", "SigningKeys", "license_key_hash",
    "verify_offline", "CertificateReturned", "ReturnedList", "newer", "FeatureGrant", "FeatureNotLicensed",
    "VersionNotLicensed", "GrantNotStarted", "GrantNotFound", "NoSeat", "PolicyLimit", "SeatsReserved",
    "UserLimit", "HostLimit", "GroupLimit", "NotAllowed", "Excluded", "NotIncluded", "VendorKeys", "LicenseFile",
    "FileLicense", "verify_chain_offline", "LicenseFileInvalid", "LicenseFileExpired", "WrongSiteKey",
    "WrongLicenseFile", "LicenseNotInFile", "machine_fingerprint", "NoMachineId", "MACHINE_ID_ENV",
]
