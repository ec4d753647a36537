package licensefile

import "errors"

// Why a document is refused. Every error a function of this package
// returns for a document wraps exactly one of these (errors.Is), with a
// message that says what was found; none holds key material.
var (
	// ErrMalformed: not a document of this format at all, or cut short:
	// no armour, a signature block that is not a JWS compact token, JSON
	// that does not parse, a duplicate or non-lowercase field name,
	// trailing data.
	ErrMalformed = errors.New("malformed or truncated")
	// ErrWrongDocument: a well-formed document of another kind (a usage
	// export given as a license file): its armour or its JWS typ says so.
	ErrWrongDocument = errors.New("not this kind of document")
	// ErrUnknownField: the signed payload holds a field this seatd does not
	// know. It is refused, never ignored: a field added by a later format
	// may limit what the file grants, and ignoring it would grant more.
	ErrUnknownField = errors.New("unknown field")
	// ErrKeyType: a key, or a signature's alg, that is not Ed25519 (EdDSA).
	ErrKeyType = errors.New("not an Ed25519 key")
	// ErrUnknownKey: signed by a key (its kid) that is not among the keys
	// given to verify with.
	ErrUnknownKey = errors.New("signed by an unknown key")
	// ErrBadSignature: the signature does not verify over the signed
	// payload with the key its kid names: forged, or a signature taken
	// from another document.
	ErrBadSignature = errors.New("bad signature")
	// ErrTampered: the readable copy of the payload differs from the
	// payload the signature covers (someone edited the text).
	ErrTampered = errors.New("readable payload differs from the signed payload")
	// ErrInvalid: signed, but holds a value seatd would refuse (it wraps
	// the *server.Error that names the field).
	ErrInvalid = errors.New("invalid content")
	// ErrWrongSite: the license file names another site key than this
	// seatd's, or a usage export was not signed by the site key the file
	// names.
	ErrWrongSite = errors.New("made for another site key")
	// ErrWrongHost: the license file is bound to another host (hostname
	// or machine-id) than this one.
	ErrWrongHost = errors.New("bound to another host")
	// ErrExpired: now is past the file's not_after.
	ErrExpired = errors.New("past its not_after")
	// ErrNotNewer: a replacement file whose serial is not above the
	// serial of the file in force (an older file played back).
	ErrNotNewer = errors.New("serial not newer than the file in force")
	// ErrSameFile: the replacement is the file in force itself (same
	// serial, same payload): nothing to do, not an attack.
	ErrSameFile = errors.New("the file in force")
	// ErrWrongFile: a usage export made under another license file
	// (serial) than the one given to check it against.
	ErrWrongFile = errors.New("made under another license file")
)
