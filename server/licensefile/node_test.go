package licensefile

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNodeVerifies has Node's crypto, which shares no code with seatd,
// verify the vendor's signature over license files (testdata/verify.mjs):
// the format is a JWS any verifier reads, and the readable copy is the
// payload. Node is required (make preflight installs it), never skipped.
func TestNodeVerifies(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "this test verifies with Node.js (>= 20): install it (make preflight)")

	golden, err := os.ReadFile("testdata/site.lic")
	require.NoError(t, err)
	fresh := signSample(t, func(f *File) { f.Serial, f.Customer = 8, `Ünïcode "quoted" <b>&</b>` })
	byOther, err := Sign(sampleFile(), otherPriv)
	require.NoError(t, err)
	label, readable, token := parts(t, golden)
	head, _, sig := splitToken(token)
	_, _, otherToken := parts(t, fresh)
	_, otherPayload, _ := splitToken(otherToken)

	type nodeCase struct {
		Document  string `json:"document"`
		VendorKey JWK    `json:"vendor_key"`
	}
	type verdict struct {
		OK      bool   `json:"ok"`
		Reason  string `json:"reason"`
		Serial  int64  `json:"serial"`
		SiteKid string `json:"site_kid"`
	}
	cases := []struct {
		name string
		doc  []byte
		want verdict // Reason only when refused
	}{
		{"the golden file", golden, verdict{OK: true, Serial: 7, SiteKid: KeyID(sitePub)}},
		{"a fresh file", fresh, verdict{OK: true, Serial: 8, SiteKid: KeyID(sitePub)}},
		{"with CRLF", []byte(strings.ReplaceAll(string(golden), "\n", "\r\n")), verdict{OK: true, Serial: 7, SiteKid: KeyID(sitePub)}},
		{"readable copy edited", []byte(strings.Replace(string(golden), `"seats": 20`, `"seats": 200`, 1)), verdict{Reason: "readable"}},
		{"payload swapped under the signature", armour(label, readable, head+"."+otherPayload+"."+sig), verdict{Reason: "signature"}},
		{"signed by another vendor", byOther, verdict{Reason: "signature"}},
	}
	in := make([]nodeCase, len(cases))
	for i, c := range cases {
		in[i] = nodeCase{Document: string(c.doc), VendorKey: NewJWK(vendorPub)}
	}
	input, err := json.Marshal(in)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/verify.mjs")
	cmd.Stdin = strings.NewReader(string(input))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var verdicts []verdict
	require.NoError(t, json.Unmarshal(out, &verdicts), "node said %s", out)
	require.Len(t, verdicts, len(cases))

	for i, c := range cases {
		require.Equal(t, c.want, verdicts[i], c.name)
		// Go agrees with Node on every case.
		_, goErr := Open(c.doc, []ed25519.PublicKey{vendorPub})
		require.Equal(t, c.want.OK, goErr == nil, "%s: Go says %v", c.name, goErr)
	}
}
