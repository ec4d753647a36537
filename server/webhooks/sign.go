package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every endpoint secret: the rest is the base64 of
// the HMAC key (Standard Webhooks).
const SecretPrefix = "whsec_"

// NewSecret makes an endpoint secret: 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ErrBadSecret: a secret that is not "whsec_" + base64 of 24 to 64 bytes.
var ErrBadSecret = errors.New(`a webhook secret is "whsec_" and the base64 of 24 to 64 bytes`)

// CheckSecret checks the shape of a secret given by an admin.
func CheckSecret(s string) error {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return ErrBadSecret
	}
	return nil
}

// Sign sets the Standard Webhooks headers of a request carrying body: the
// signature of id.timestamp.body under each secret ("v1,<base64>",
// space-separated; two while a secret is rotated, so a receiver that
// knows either accepts it).
func Sign(h http.Header, id string, at time.Time, body []byte, secrets []string) error {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return ErrBadSecret // never the secret itself
		}
		sig, err := wh.Sign(id, at, body)
		if err != nil {
			return err
		}
		sigs = append(sigs, sig)
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return nil
}
