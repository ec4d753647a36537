package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The envelope every document of this package is written in:
//
//	-----BEGIN SEATD LICENSE FILE-----
//	{
//	  "serial": 7,
//	  …the payload, indented…
//	}
//	-----BEGIN SEATD SIGNATURE-----
//	eyJhbGciOiJFZERTQSIsImtpZCI6Ij…  (a JWS, compact serialization,
//	…                                    wrapped at 64 columns)
//	-----END SEATD SIGNATURE-----
//
// Why this layout, not a bare JWS or the JWS JSON serialization:
//
//   - The signature block is a whole, standard JWS (RFC 7515, EdDSA per
//     RFC 8037, payload embedded): any JOSE library, or a few dozen lines of
//     Node's crypto (testdata/verify.mjs), verifies it alone, with no
//     seatd code and no canonical JSON to agree on: the signature covers
//     the payload's bytes as they were signed.
//   - Both serializations of RFC 7515 carry the payload base64url-encoded,
//     which no customer or auditor can read. The readable copy above the
//     signature is the payload indented; it is not trusted but checked:
//     with white space removed (json.Compact) it must be the signed
//     payload byte for byte, or the document is refused (ErrTampered).
//     So a file edited by hand is refused, and named as such, apart from
//     a forged signature (ErrBadSignature); and what the text says is
//     exactly what was signed. White space (an editor's CRLF, a mailer's
//     re-indentation) changes nothing.
//   - PEM-like armour lines tell a reader what the text is, and an
//     armour line missing at the end tells a cut-short copy (ErrMalformed)
//     before anything else is judged. The layout follows OpenPGP's
//     clear-signed messages, which have survived email for decades.
//
// The JWS header holds alg (EdDSA only), kid (KeyID of the signing key)
// and typ, which names the kind of document: a signature over a usage
// export can never pass for a license file, nor a lease certificate (typ
// JWT, signed by the same site key) for either.
type kind struct {
	label string // of the BEGIN line
	typ   string // the JWS typ header
	name  string // in error messages
}

var (
	kindLicenseFile = kind{"SEATD LICENSE FILE", "seatd-license-file-v1", "license file"}
	kindSiteRequest = kind{"SEATD SITE REQUEST", "seatd-site-request-v1", "site request"}
	kindUsageExport = kind{"SEATD USAGE EXPORT", "seatd-usage-export-v1", "usage export"}
	kinds           = []kind{kindLicenseFile, kindSiteRequest, kindUsageExport}
)

const (
	signatureBegin = "-----BEGIN SEATD SIGNATURE-----"
	signatureEnd   = "-----END SEATD SIGNATURE-----"
	wrapColumns    = 64
	// maxDocument bounds what is parsed: a file of MaxLicenses licenses
	// with MaxGrantsPerLicense grants each stays far below it.
	maxDocument = 64 << 20
	algorithm   = "EdDSA"
)

func beginLine(label string) string { return "-----BEGIN " + label + "-----" }

// seal returns payload signed with key, in the envelope of kind k.
func seal(k kind, payload any, key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign %s: %w (a %d-byte private key)", k.name, ErrKeyType, len(key))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "Smith & Sons" stays readable
	if err := enc.Encode(payload); err != nil {
		return nil, fmt.Errorf("sign %s: %w", k.name, err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	pub := key.Public().(ed25519.PublicKey)
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key, KeyID: KeyID(pub)}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(k.typ)),
	)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", k.name, err)
	}
	jws, err := signer.Sign(body)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", k.name, err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", k.name, err)
	}
	var readable bytes.Buffer
	if err := json.Indent(&readable, body, "", "  "); err != nil {
		return nil, fmt.Errorf("sign %s: %w", k.name, err)
	}
	var out bytes.Buffer
	out.WriteString(beginLine(k.label) + "\n")
	out.Write(readable.Bytes())
	out.WriteString("\n" + signatureBegin + "\n")
	for len(token) > wrapColumns {
		out.WriteString(token[:wrapColumns] + "\n")
		token = token[wrapColumns:]
	}
	out.WriteString(token + "\n" + signatureEnd + "\n")
	return out.Bytes(), nil
}

// envelope is a document taken apart, nothing in it trusted yet.
type envelope struct {
	kind     kind
	readable []byte // nil for a bare token (openToken)
	token    string
	header   jwsHeader
	jws      *jose.JSONWebSignature
	payload  []byte // what the signature covers, once verify says so
}

// jwsHeader is every header field seatd writes; any other is refused.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// unarmour takes a document of kind k apart: ErrWrongDocument for
// another kind, ErrMalformed for anything else that is not one.
func unarmour(data []byte, k kind) (*envelope, error) {
	if len(data) > maxDocument {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", k.name, ErrMalformed, maxDocument)
	}
	text := strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n"))
	first, rest, _ := strings.Cut(text, "\n")
	if first != beginLine(k.label) {
		for _, other := range kinds {
			if first == beginLine(other.label) {
				return nil, fmt.Errorf("%w: this is a %s, not a %s", ErrWrongDocument, other.name, k.name)
			}
		}
		return nil, fmt.Errorf("%s: %w: it does not start with %q", k.name, ErrMalformed, beginLine(k.label))
	}
	readable, sig, ok := strings.Cut(rest, "\n"+signatureBegin+"\n")
	if !ok {
		return nil, fmt.Errorf("%s: %w: no %q line (cut short?)", k.name, ErrMalformed, signatureBegin)
	}
	sig, ok = strings.CutSuffix(sig, "\n"+signatureEnd)
	if !ok {
		return nil, fmt.Errorf("%s: %w: it does not end with %q (cut short?)", k.name, ErrMalformed, signatureEnd)
	}
	token := strings.Join(strings.Fields(sig), "")
	e, err := parseToken(token, k)
	if err != nil {
		return nil, err
	}
	e.readable = []byte(readable)
	return e, nil
}

// parseToken reads a JWS compact token's header, checking alg and typ
// (before go-jose, so that each refusal is named).
func parseToken(token string, k kind) (*envelope, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return nil, fmt.Errorf("%s: %w: the signature is not a JWS compact token with a payload (cut short?)", k.name, ErrMalformed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w: the JWS header is not base64url", k.name, ErrMalformed)
	}
	var h jwsHeader
	if err := decodeStrict(raw, &h); err != nil {
		return nil, fmt.Errorf("%s: %w: JWS header: %v", k.name, ErrMalformed, err)
	}
	if h.Alg != algorithm {
		return nil, fmt.Errorf("%s: %w: signed with alg %q, not %s (Ed25519)", k.name, ErrKeyType, h.Alg, algorithm)
	}
	if h.Typ != k.typ {
		return nil, fmt.Errorf("%s: %w: its JWS typ is %q, not %q", k.name, ErrWrongDocument, h.Typ, k.typ)
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%s: %w: the signature is not a JWS compact token", k.name, ErrMalformed)
	}
	return &envelope{kind: k, token: token, header: h, jws: jws}, nil
}

// verify checks the signature with the key among keys that its kid
// names; on success e.payload is the signed payload.
func (e *envelope) verify(keys []ed25519.PublicKey) error {
	for i, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			return fmt.Errorf("%s: verifying key %d: %w", e.kind.name, i, ErrKeyType)
		}
	}
	i := slices.IndexFunc(keys, func(k ed25519.PublicKey) bool { return KeyID(k) == e.header.Kid })
	if i < 0 {
		ids := make([]string, len(keys))
		for j, k := range keys {
			ids[j] = KeyID(k)
		}
		return fmt.Errorf("%s: %w: kid %q is none of %v", e.kind.name, ErrUnknownKey, e.header.Kid, ids)
	}
	payload, err := e.jws.Verify(keys[i])
	if err != nil {
		return fmt.Errorf("%s: %w (key %s)", e.kind.name, ErrBadSignature, e.header.Kid)
	}
	e.payload = payload
	return nil
}

// checkReadable refuses a readable copy that is not the signed payload
// (verify first), naming the first difference.
func (e *envelope) checkReadable() error {
	if e.readable == nil {
		return nil
	}
	var compact bytes.Buffer
	if json.Compact(&compact, e.readable) == nil && bytes.Equal(compact.Bytes(), e.payload) {
		return nil
	}
	return fmt.Errorf("%s: %w: %s", e.kind.name, ErrTampered, firstDifference(e.readable, e.payload))
}

// firstDifference says where the readable copy departs from the payload.
func firstDifference(readable, payload []byte) string {
	var r, p any
	if err := unmarshalNumbers(readable, &r); err != nil {
		return "the readable copy is not JSON"
	}
	if err := unmarshalNumbers(payload, &p); err != nil {
		return "the signed payload is not JSON"
	}
	if where := diff(r, p, ""); where != "" {
		return where
	}
	return "the same values, written differently (order of fields, or escapes)"
}

func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func diff(r, p any, path string) string {
	at := path
	if at == "" {
		at = "the payload"
	}
	switch p := p.(type) {
	case map[string]any:
		rm, ok := r.(map[string]any)
		if !ok {
			return at + " differs"
		}
		keys := make([]string, 0, len(p)+len(rm))
		for k := range p {
			keys = append(keys, k)
		}
		for k := range rm {
			if _, ok := p[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			pv, inP := p[k]
			rv, inR := rm[k]
			field := strings.TrimPrefix(path+"."+k, ".")
			switch {
			case !inP:
				return fmt.Sprintf("%s: in the readable copy only", field)
			case !inR:
				return fmt.Sprintf("%s: missing from the readable copy (signed: %s)", field, show(pv))
			}
			if d := diff(rv, pv, field); d != "" {
				return d
			}
		}
		return ""
	case []any:
		rs, ok := r.([]any)
		if !ok {
			return at + " differs"
		}
		if len(rs) != len(p) {
			return fmt.Sprintf("%s: %d entries in the readable copy, %d signed", at, len(rs), len(p))
		}
		for i := range p {
			if d := diff(rs[i], p[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(r, p) {
		return fmt.Sprintf("%s: the readable copy says %s, the signed payload %s", at, show(r), show(p))
	}
	return ""
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return "…"
	}
	return string(b)
}

// decode reads the verified payload into v strictly (decodeStrict).
func (e *envelope) decode(v any) error {
	if err := decodeStrict(e.payload, v); err != nil {
		return fmt.Errorf("%s: %w", e.kind.name, err)
	}
	return nil
}

// DecodeStrict is how every document of this package is read, for the
// tools that read their inputs alike (a vendor's entitlements): the
// errors are ErrUnknownField and ErrMalformed, naming the field.
func DecodeStrict(data []byte, v any) error { return decodeStrict(data, v) }

// decodeStrict reads one JSON object into v and refuses anything seatd
// would otherwise read loosely: a field v does not have (ErrUnknownField),
// a duplicate field name, a name not in lowercase (encoding/json matches
// names without case: "SEATS" would fill seats where another reader sees
// nothing), trailing data (ErrMalformed).
func decodeStrict(data []byte, v any) error {
	if err := checkNames(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeError names what json.Decoder refused.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "json: unknown field "):
		return fmt.Errorf("%w %s", ErrUnknownField, strings.TrimPrefix(msg, "json: unknown field "))
	case errors.As(err, &te):
		return fmt.Errorf("%w: %s: %s", ErrMalformed, te.Field, typeProblem(te))
	case errors.As(err, &pe):
		return fmt.Errorf("%w: %q is not an RFC 3339 time such as 2027-01-31T00:00:00Z", ErrMalformed, pe.Value)
	default:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
}

func typeProblem(te *json.UnmarshalTypeError) string {
	switch te.Type {
	case reflect.TypeFor[Duration]():
		return fmt.Sprintf("%s is not a duration such as \"6m\", \"72h\" or \"1h30m\"", te.Value)
	case reflect.TypeFor[string]():
		return fmt.Sprintf("must be a string, not a %s (in YAML, quote a version: \"2024.10\")", te.Value)
	}
	return fmt.Sprintf("must be %s, not a %s", te.Type, te.Value)
}

// checkNames walks a JSON value and refuses duplicate or non-lowercase
// field names, and anything after the value.
func checkNames(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkNames(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", ErrMalformed)
	}
	return nil
}

func walkNames(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			name, _ := t.(string)
			field := strings.TrimPrefix(path+"."+name, ".")
			if !lowercaseName(name) {
				return fmt.Errorf("%w: field %q: names are lowercase letters, digits and '_'", ErrMalformed, field)
			}
			if seen[name] {
				return fmt.Errorf("%w: field %q appears twice", ErrMalformed, field)
			}
			seen[name] = true
			if err := walkNames(dec, field); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkNames(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	return nil
}

func lowercaseName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	})
}
