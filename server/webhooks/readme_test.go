package webhooks_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/webhooks"
)

// readmeReceiver is the README's Webhooks section's Python receiver, with
// a harness that reads cases as JSON lines and prints a verdict for each.
func readmeReceiver(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Webhooks\n")
	require.True(t, ok, "README has a Webhooks section")
	section, _, _ = strings.Cut(section, "\n## ")
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, m, "the Webhooks section shows a Python receiver")
	script := m[1] + `
import json, sys
for line in sys.stdin:
    c = json.loads(line)
    print("ok" if verify(c["secret"], c["headers"], base64.b64decode(c["body"])) else "refused", flush=True)
`
	path := filepath.Join(t.TempDir(), "receiver.py")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
	return path
}

// TestREADMEReceiverVerifiesADelivery has the README's receiver, Python's
// standard library alone (no code shared with seatd), verify a real
// delivery, and refuse it tampered, under another secret, or too old.
func TestREADMEReceiverVerifiesADelivery(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "this test verifies with Python 3 (make preflight installs it)")
	script := readmeReceiver(t)

	// A real delivery, signed on the real clock (the receiver checks it).
	b := setup(t, func(c *webhooks.Config) { c.Now = time.Now })
	r := newReceiver(t, func(int) int { return http.StatusOK })
	ep := b.endpoint(t, r.URL)
	b.license(t)
	b.drain(t)
	got := r.requests()
	require.Len(t, got, 1)
	req := got[0]

	type verifyCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	headers := func(h http.Header) map[string]string {
		return map[string]string{
			"webhook-id": h.Get("webhook-id"), "webhook-timestamp": h.Get("webhook-timestamp"),
			"webhook-signature": h.Get("webhook-signature"),
		}
	}
	b64 := base64.StdEncoding.EncodeToString
	tampered := bytes.Replace(req.Body, []byte(`"seats":2`), []byte(`"seats":9`), 1)
	require.NotEqual(t, req.Body, tampered)
	old := http.Header{}
	require.NoError(t, webhooks.Sign(old, "evt_0123456789abcdef01234567", time.Now().Add(-time.Hour), req.Body, ep.Secrets))
	rotated := http.Header{}
	other := webhooks.NewSecret()
	require.NoError(t, webhooks.Sign(rotated, "evt_0123456789abcdef01234567", time.Now(), req.Body, []string{other, ep.Secrets[0]}))
	cases := []struct {
		name string
		c    verifyCase
		want string
	}{
		{"the delivery", verifyCase{ep.Secrets[0], headers(req.Header), b64(req.Body)}, "ok"},
		{"tampered", verifyCase{ep.Secrets[0], headers(req.Header), b64(tampered)}, "refused"},
		{"another secret", verifyCase{webhooks.NewSecret(), headers(req.Header), b64(req.Body)}, "refused"},
		{"an hour old", verifyCase{ep.Secrets[0], headers(old), b64(req.Body)}, "refused"},
		{"two secrets while rotating: the old", verifyCase{ep.Secrets[0], headers(rotated), b64(req.Body)}, "ok"},
		{"two secrets while rotating: the new", verifyCase{other, headers(rotated), b64(req.Body)}, "ok"},
	}
	var in bytes.Buffer
	for _, c := range cases {
		line, err := json.Marshal(c.c)
		require.NoError(t, err)
		in.Write(append(line, '\n'))
	}
	cmd := exec.CommandContext(t.Context(), python, script)
	cmd.Stdin = &in
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	verdicts := strings.Fields(string(out))
	require.Len(t, verdicts, len(cases), "%s", out)
	for i, c := range cases {
		require.Equal(t, c.want, verdicts[i], c.name)
	}
}

// TestREADMEPayloadTablesMatchTheSchema: the README's tables of what each
// event type's data holds, and of each object's fields (required, or
// marked ? when absent if empty), say what PayloadSchemas says.
func TestREADMEPayloadTablesMatchTheSchema(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Webhooks\n")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (`[^|]*) \\| ([^|]*) \\|$")
	code := regexp.MustCompile("`([^`]*)`")
	names := func(cell string) []string {
		var out []string
		for _, m := range code.FindAllStringSubmatch(cell, -1) {
			out = append(out, m[1])
		}
		return out
	}
	defs := webhooks.PayloadSchemas()
	members := func(def any, key string) (required, all []string) {
		d := def.(map[string]any)
		if key != "" {
			d = d["properties"].(map[string]any)[key].(map[string]any)
		}
		req, _ := d["required"].([]string)
		for name := range d["properties"].(map[string]any) {
			all = append(all, name)
		}
		return req, all
	}
	objects := map[string]string{"license": "WebhookLicense", "lease": "WebhookLease", "api_key": "WebhookAPIKey", "seats": "WebhookSeats", "endpoint": "WebhookEndpointRef", "grant": "WebhookGrant"}
	typesSeen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		left, right := names(m[1]), m[2]
		if def, isObject := objects[left[0]]; isObject && len(left) == 1 { // an object's row; else a row of event types
			var req, opt []string
			for _, f := range names(right) {
				if name, optional := strings.CutSuffix(f, "?"); optional {
					opt = append(opt, name)
				} else {
					req = append(req, f)
				}
			}
			wantReq, all := members(defs[def], "")
			require.ElementsMatch(t, wantReq, req, "README: the required fields of %s", left[0])
			require.ElementsMatch(t, all, append(req, opt...), "README: the fields of %s", left[0])
			continue
		}
		for _, typ := range left {
			typesSeen[typ] = true
			def, ok := defs[webhooks.SchemaName(server.EventType(typ))]
			require.True(t, ok, "README names an event type %q seatd does not send", typ)
			req, _ := members(def, "data")
			var data []string
			for _, n := range names(right) {
				if _, isObject := objects[n]; isObject {
					data = append(data, n)
				}
			}
			require.ElementsMatch(t, req, data, "README: the data of %s", typ)
		}
	}
	for _, typ := range server.EventTypes {
		require.True(t, typesSeen[string(typ)], "README's table has no row for %s", typ)
	}
}
