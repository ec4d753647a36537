// Package locked is seatd's locked mode (docs/concepts/license-files.md):
// the licenses of a vendor-signed license file, and no others, kept in the
// store, so that nothing seatd serves grants more than the file.
//
// The site key (sitekey.go) is the one the file names, made and kept by
// seatd like the lease-signing keys. Sync (sync.go) makes the store's
// licenses and feature grants those of a file. The Controller
// (controller.go) puts a file in force at start, reloads it (SIGHUP, the
// admin call, a changed file), refuses one it may not serve with the
// previous one kept, and tells readiness whether this instance's file is
// the one the store has in force. Everything else about seats is judged
// by the store as usual; the service refuses every admin change of
// licenses and grants (LICENSE_FILE_LOCKED).
package locked
