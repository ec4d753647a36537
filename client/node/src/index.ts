// seatd's TypeScript client. See docs/clients/typescript.md.
export { Client, type ClientOptions, type AcquireOptions, type WaitOptions, type Log } from "./client.js";
export { Lease } from "./lease.js";
export { SigningKeys, verifyOffline, checkHolder, compareVersions, licenseKeyHash, BadCertificateError, CertificateExpiredError, CertificateReturnedError, checkReturned, newerReturned, RETURNED_TYPE, REASON_BAD_CERTIFICATE, type Claims, type Holder, type Jwks, type ReturnedList } from "./certificate.js";
export { VendorKeys, LicenseFile, verifyChainOffline, keyId, LICENSE_FILE_TYPE, LicenseFileInvalidError, LicenseFileExpiredError, WrongSiteKeyError, WrongLicenseFileError, LicenseNotInFileError, type FileLicense, type VendorKeyData } from "./licensefile.js";
export { machineFingerprint, MACHINE_ID_ENV, NoMachineIdError } from "./fingerprint.js";
export { AdminClient, type AdminClientOptions } from "./admin.js";
export type { CallOptions, ConnectionOptions, TlsOptions } from "./rpc.js";
export { serviceConfig } from "./service-config.js";
export * from "./errors.js";
export * as seatdv1 from "./seatdv1.js";
