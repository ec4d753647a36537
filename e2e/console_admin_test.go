package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestConsoleForADaysWork does an admin's day in the console, at 375 px
// and at desktop width, each step checked through the API: create a
// license (a refused one first: the error next to the field it names),
// tell two licenses of one name apart, edit it (name, seats, overdraft,
// TTL entered and shown in minutes, borrowing, expiry), add a feature
// grant, set a site policy (a refused rule first, its error on that
// rule's field), create a tenant and an API key (its secret shown once,
// and working), revoke the key, add a webhook endpoint (its secret shown
// once, its description shown as text), see a delivery in its log and
// replay it, disable, enable and delete it, page through the audit log, download the
// usage report as CSV and delete the license after a confirmation. It
// saves a screenshot of every page.
func TestConsoleForADaysWork(t *testing.T) {
	t.Parallel()
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"375px", 375, 812}, {"desktop", 1280, 900}} {
		t.Run(size.name, func(t *testing.T) {
			consoleDay(t, size.width, size.height)
		})
	}
}

func consoleDay(t *testing.T, width, height int64) {
	p := start(t, options{args: []string{"--webhook-allow-private-addresses"}}) // the receiver is on loopback
	b := newBrowser(t, width, height)
	narrow := width < 600
	fits := func(page string) {
		t.Helper()
		if narrow {
			require.True(t, eval[bool](b, noSideScroll), "the %s page fits %d px; too wide: %v", page, width, eval[[]string](b, overflowing))
		}
	}
	b.allow("/v1/admin/licenses", http.StatusBadRequest) // the refused create and policy, on purpose
	b.signIn(p, p.OperatorKey)
	b.waitFor("the overview", `document.getElementById('license-new') !== null`)

	// A refused license: the API's message next to the field it names,
	// and that field focused.
	b.run("open the new license form", chromedp.Click(chromedp.CSS("#license-new")))
	b.waitFor("the form", `document.getElementById('new-seats') !== null`)
	refused := p.do(t, "POST", "/v1/admin/licenses", p.OperatorKey, map[string]any{"name": "x", "seats": 0}).
		requireCode(t, http.StatusBadRequest)
	b.run("ask for 0 seats", chromedp.SetValue(chromedp.CSS("#new-name"), "Render Farm"),
		chromedp.SetValue(chromedp.CSS("#new-seats"), "0"), chromedp.Click(chromedp.CSS("#new-save")))
	b.waitFor("the refusal by the field", `!document.getElementById('new-seats-error').hidden`)
	require.Equal(t, refused.str(t, "message"), eval[string](b, `document.getElementById('new-seats-error').textContent`))
	require.Equal(t, "new-seats", eval[string](b, `document.activeElement.id`))
	require.Equal(t, "true", eval[string](b, `document.getElementById('new-seats').getAttribute('aria-invalid')`))
	b.requireLabelled("new license")
	fits("new license")
	b.screenshot("license-new-refused")

	// Create it: 5 seats, a 10 minute TTL, borrowing up to 2 hours.
	b.run("create the license", chromedp.SetValue(chromedp.CSS("#new-seats"), "5"),
		chromedp.SetValue(chromedp.CSS("#new-ttl"), "10"), chromedp.SetValue(chromedp.CSS("#new-ttl-unit"), "min"),
		chromedp.SetValue(chromedp.CSS("#new-borrow"), "2"), chromedp.SetValue(chromedp.CSS("#new-borrow-unit"), "h"),
		chromedp.SetValue(chromedp.CSS("#new-expires"), "2031-01-02T03:04"),
		chromedp.Click(chromedp.CSS("#new-save")))
	licID := pollFor[string](b, "the new license's page", `location.hash.startsWith('#/licenses/lic_') && document.getElementById('edit-seats') !== null && location.hash.slice(11)`)
	lic := p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusOK)
	require.Equal(t, "Render Farm", lic.str(t, "name"))
	require.Equal(t, 5.0, lic.num(t, "seats"))
	require.Equal(t, "600s", lic.str(t, "leaseTtl"))
	require.Equal(t, "7200s", lic.str(t, "maxBorrowDuration"))
	expires, err := time.ParseInLocation("2006-01-02T15:04", "2031-01-02T03:04", time.Local)
	require.NoError(t, err)
	require.Equal(t, expires.UTC().Format(time.RFC3339), lic.str(t, "expiresAt"))
	facts := eval[string](b, `document.getElementById('license-facts').innerText`)
	require.Contains(t, facts, "10 min", "the TTL shown in the unit it was entered in")
	require.Contains(t, facts, "up to 2 h offline")
	require.Equal(t, []string{"10", "min"}, eval[[]string](b, `[document.getElementById('edit-ttl').value, document.getElementById('edit-ttl-unit').value]`))

	// Another license of the same name: the overview tells them apart.
	twin := consoleLicense(t, p, map[string]any{"name": "Render Farm", "seats": 1}).str(t, "id")
	b.run("open the overview", chromedp.Click(chromedp.CSS(`#nav a[data-page="overview"]`)))
	b.waitFor("both licenses", fmt.Sprintf(`document.querySelector('tr[data-license-id="%s"]') !== null && document.querySelector('tr[data-license-id="%s"]') !== null`, licID, twin))
	shortOf := func(id string) string {
		return eval[string](b, fmt.Sprintf(`document.querySelector('tr[data-license-id="%s"] .short-id').textContent`, id))
	}
	require.NotEqual(t, shortOf(licID), shortOf(twin))
	require.True(t, strings.HasPrefix(licID, shortOf(licID)))
	require.Equal(t, "10 min", eval[string](b, fmt.Sprintf(`document.querySelector('tr[data-license-id="%s"] .ttl').textContent`, licID)))
	b.requireLabelled("overview")
	fits("overview")
	b.screenshot("overview-twins")

	// Edit it: name, seats, overdraft, no expiry, no borrowing.
	b.clickNow("open the license", fmt.Sprintf(`tr[data-license-id="%s"] th a`, licID))
	b.waitFor("the edit form", `document.getElementById('edit-seats') !== null`)
	require.Equal(t, headingShortID(b), licID[:12], "the heading's short id")
	b.run("edit the license", chromedp.SetValue(chromedp.CSS("#edit-name"), "Render Farm EU"),
		chromedp.SetValue(chromedp.CSS("#edit-seats"), "6"), chromedp.SetValue(chromedp.CSS("#edit-overdraft"), "1"),
		chromedp.SetValue(chromedp.CSS("#edit-expires"), ""), chromedp.SetValue(chromedp.CSS("#edit-borrow"), "0"),
		chromedp.Click(chromedp.CSS("#edit-save")))
	b.waitFor("the save", `(document.querySelector('#edit-status .ok') || {}).textContent === 'Saved: 6 seats +1 overdraft, lease TTL 10 min, active, no borrowing.'`)
	lic = p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusOK)
	require.Equal(t, "Render Farm EU", lic.str(t, "name"))
	require.Equal(t, 6.0, lic.num(t, "seats"))
	require.Equal(t, 1.0, lic.num(t, "overdraft"))
	require.NotContains(t, lic.JSON, "expiresAt", "the expiry cleared")
	require.NotContains(t, lic.JSON, "maxBorrowDuration", "borrowing off")

	// A feature grant.
	b.run("add a grant", chromedp.SetValue(chromedp.CSS("#grant-feature"), "render"), chromedp.SetValue(chromedp.CSS("#grant-version"), "2025"),
		chromedp.SetValue(chromedp.CSS("#grant-seats"), "2"), chromedp.Click(chromedp.CSS("#grant-add")))
	b.waitFor("the grant's row", `document.querySelectorAll('#grants tr[data-grant-id]').length === 1`)
	grants := p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["grants"].([]any)
	require.Len(t, grants, 1)
	g := grants[0].(map[string]any)
	require.Equal(t, []any{"render", "2025", 2.0}, []any{g["feature"], g["version"], g["seats"]})
	require.Equal(t, g["id"], eval[string](b, `document.querySelector('#grants tr[data-grant-id]').dataset.grantId`))
	// Edit it: 3 seats.
	b.run("edit the grant", chromedp.Click(chromedp.CSS(`#grants tr[data-grant-id] button[aria-label^="Edit"]`)))
	b.waitFor("the grant's form", fmt.Sprintf(`(document.getElementById('grant-form') || {dataset: {}}).dataset.grantId === '%s'`, g["id"]))
	require.Equal(t, "2025", eval[string](b, `document.getElementById('grant-version').value`))
	b.run("3 seats", chromedp.SetValue(chromedp.CSS("#grant-seats"), "3"), chromedp.Click(chromedp.CSS("#grant-add")))
	b.waitFor("the grant saved", `(document.querySelector('#grant-status .ok') || {}).textContent === 'Saved grant `+g["id"].(string)+`: render up to 2025, 3 seats.'`)
	got := p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["grants"].([]any)[0].(map[string]any)
	require.Equal(t, 3.0, got["seats"])
	b.run("done editing", chromedp.Click(chromedp.CSS("#grant-edit-done")))
	b.waitFor("the add form back", `document.getElementById('grant-form') !== null && document.getElementById('grant-form').dataset.grantId === undefined`)

	// A site policy: a reservation of no seats is refused, next to the
	// rule's count; then a cap on carol is set.
	b.run("edit the policy", chromedp.Click(chromedp.CSS("#policy-edit-open")))
	b.run("add a rule", chromedp.Click(chromedp.CSS("#policy-add-rule")))
	b.run("reserve 0 seats for carol", chromedp.SetValue(chromedp.CSS("#policy-rules-0-count"), "0"),
		chromedp.SetValue(chromedp.CSS("#policy-rules-0-subject-name"), "carol"), chromedp.Click(chromedp.CSS("#policy-save")))
	b.waitFor("the refusal", `document.querySelector('#policy-status .error-message') !== null`)
	badField := eval[string](b, `(document.querySelector('#policy-form [aria-invalid="true"]') || {id: ''}).id`)
	require.True(t, strings.HasPrefix(badField, "policy-rules-0-"), "the error on rule 0's field, not %q", badField)
	require.NotEmpty(t, eval[string](b, fmt.Sprintf(`document.getElementById('%s-error').textContent`, badField)))
	b.requireLabelled("policy editor")
	fits("policy editor")
	b.screenshot("policy-refused")
	b.run("cap carol at 1", chromedp.SetValue(chromedp.CSS("#policy-rules-0-kind"), "KIND_MAX"),
		chromedp.SetValue(chromedp.CSS("#policy-rules-0-count"), "1"), chromedp.Click(chromedp.CSS("#policy-save")))
	b.waitFor("the policy saved", `(document.querySelector('#policy-status .ok') || {}).textContent === 'Saved: 1 rules, 0 priorities, 0 lingers.'`)
	policy := p.do(t, "GET", "/v1/admin/licenses/"+licID+"/policy", p.OperatorKey, nil).requireCode(t, http.StatusOK)
	rules := policy.JSON["rules"].([]any)
	require.Len(t, rules, 1)
	rule := rules[0].(map[string]any)
	require.Equal(t, "KIND_MAX", rule["kind"])
	require.Equal(t, 1.0, rule["count"])
	require.Equal(t, map[string]any{"kind": "KIND_USER", "name": "carol"}, rule["subject"])
	b.waitFor("the policy's row", `(document.querySelector('#policy .policy-lines tr[data-line="rule"] .who') || {}).textContent === 'user carol'`)
	b.requireLabelled("license")
	fits("license")
	b.screenshot("license-edited")

	// A seat taken today, for the usage report.
	consoleAcquire(t, p, lic.str(t, "key"), "carol", "ws-carol")

	// Tenants: a new tenant and an API key, its secret shown once.
	b.run("open tenants", chromedp.Click(chromedp.CSS(`#nav a[data-page="tenants"]`)))
	b.waitFor("the tenants", `document.querySelector('#tenants tr[data-tenant-id="default"]') !== null`)
	b.run("create a tenant", chromedp.SetValue(chromedp.CSS("#tenant-id"), "acme-corp"), chromedp.SetValue(chromedp.CSS("#tenant-name"), "ACME Corp"),
		chromedp.Click(chromedp.CSS("#tenant-create")))
	b.waitFor("the tenant's page", `location.hash === '#/tenants/acme-corp' && document.getElementById('api-key-name') !== null`)
	b.run("create an API key", chromedp.SetValue(chromedp.CSS("#api-key-name"), "build farm"), chromedp.Click(chromedp.CSS("#api-key-create")))
	secret := pollFor[string](b, "the secret", `(document.getElementById('api-key-secret') || {}).value`)
	keyID := pollFor[string](b, "the key's row", `(document.querySelector('#api-keys tr[data-state="active"]') || {dataset: {}}).dataset.apiKeyId`)
	p.do(t, "GET", "/v1/admin/licenses?pageSize=1", secret, nil).requireCode(t, http.StatusOK)
	b.requireLabelled("tenant")
	fits("tenant")
	b.screenshot("api-key-created")
	b.run("revoke it", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-api-key-id="%s"] button`, keyID))))
	b.waitFor("the confirmation", `document.querySelector('#apikey-revoke-dialog[open]') !== null`)
	require.Equal(t, "Cancel", eval[string](b, `document.activeElement.textContent`), "the safe choice has the focus")
	b.screenshot("api-key-revoke-confirmation")
	b.run("confirm", chromedp.Click(chromedp.CSS("#apikey-revoke-dialog-confirm")))
	b.waitFor("the key revoked", fmt.Sprintf(`(document.querySelector('tr[data-api-key-id="%s"]') || {dataset: {}}).dataset.state === 'revoked'`, keyID))
	require.NotContains(t, eval[string](b, `document.getElementById('api-keys').innerText`), secret, "the secret is not listed")
	p.do(t, "GET", "/v1/admin/licenses?pageSize=1", secret, nil).requireCode(t, http.StatusUnauthorized)

	consoleWebhooks(t, p, b, fits)

	// The audit log, a page at a time: 30 group changes make two pages
	// of 25 for the default tenant.
	for i := range 30 {
		p.do(t, "PUT", fmt.Sprintf("/v1/admin/groups/g%02d", i), p.OperatorKey, map[string]any{"kind": "KIND_USERS", "members": []string{"x"}}).
			requireCode(t, http.StatusOK)
	}
	first := p.do(t, "GET", "/v1/admin/audit-events?pageSize=25", p.OperatorKey, nil).requireCode(t, http.StatusOK)
	second := p.do(t, "GET", "/v1/admin/audit-events?pageSize=25&pageToken="+first.str(t, "nextPageToken"), p.OperatorKey, nil).requireCode(t, http.StatusOK)
	ids := func(r httpResp) []string {
		var out []string
		for _, e := range r.JSON["auditEvents"].([]any) {
			out = append(out, e.(map[string]any)["id"].(string))
		}
		return out
	}
	shownIDs := `[...document.querySelectorAll('#audit tr[data-audit-id]')].map((r) => r.dataset.auditId)`
	b.run("open the audit log", chromedp.Click(chromedp.CSS(`#nav a[data-page="audit"]`)))
	b.waitFor("page 1", `document.querySelectorAll('#audit tr[data-audit-id]').length === 25`)
	require.Equal(t, ids(first), eval[[]string](b, shownIDs))
	require.Contains(t, eval[string](b, `document.getElementById('audit').innerText`), "license.create")
	b.requireLabelled("audit log")
	fits("audit log")
	b.screenshot("audit-page-1")
	b.run("next page", chromedp.Click(chromedp.CSS("#audit-next")))
	b.waitFor("page 2", `document.getElementById('audit-page').textContent.startsWith('Page 2')`)
	require.Equal(t, ids(second), eval[[]string](b, shownIDs))
	b.screenshot("audit-page-2")
	b.run("previous page", chromedp.Click(chromedp.CSS("#audit-prev")))
	b.waitFor("page 1 again", `document.getElementById('audit-page').textContent.startsWith('Page 1')`)
	require.Equal(t, ids(first), eval[[]string](b, shownIDs))

	// The usage report as CSV, the rows the API answers.
	downloads := t.TempDir()
	b.run("allow downloads", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, cdpbrowser.SetDownloadBehavior,
			cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
		return err
	}))
	b.run("open usage", chromedp.Navigate(p.url("/ui/#/usage/"+licID)))
	b.waitFor("the chart", `document.querySelector('#usage-chart rect.bar-peak') !== null && document.getElementById('usage-csv') !== null`)
	fits("usage")
	b.screenshot("usage")
	b.run("download the CSV", chromedp.Click(chromedp.CSS("#usage-csv")))
	var rows [][]string
	eventually(t, eventTimeout, "the CSV downloaded", func() bool {
		matches, _ := filepath.Glob(filepath.Join(downloads, "seatd-usage-"+licID+"-*.csv"))
		if len(matches) != 1 {
			return false
		}
		f, err := os.Open(matches[0])
		if err != nil {
			return false
		}
		defer f.Close()
		rows, err = csv.NewReader(f).ReadAll()
		return err == nil && len(rows) > 1
	})
	require.Equal(t, []string{"license_id", "license_name", "feature", "bucket_start", "peak_seats", "seat_hours", "acquisitions",
		"denials", "distinct_users", "queue_waits", "mean_queue_wait_seconds"}, rows[0])
	today := time.Now().UTC().Format("2006-01-02")
	var todays []string
	for _, r := range rows[1:] {
		if strings.HasPrefix(r[3], today) && r[2] == "" {
			todays = r
		}
	}
	require.NotNil(t, todays, "today's base pool row in %v", rows)
	require.Equal(t, []string{licID, "Render Farm EU", ""}, todays[:3])
	peak, err := strconv.Atoi(todays[4])
	require.NoError(t, err)
	require.Equal(t, 1, peak, "carol's seat")
	require.Equal(t, "1", todays[6], "one acquisition")

	// Delete the license, after a confirmation: its seat is revoked.
	b.run("open the license", chromedp.Navigate(p.url("/ui/#/licenses/"+licID)))
	b.waitFor("the delete button", `document.getElementById('license-delete') !== null && (document.getElementById('license-in-use') || {}).textContent === '1 / 6'`)
	b.run("delete", chromedp.Click(chromedp.CSS("#license-delete")))
	b.waitFor("the confirmation", `document.querySelector('#delete-dialog[open]') !== null`)
	require.Equal(t, "Cancel", eval[string](b, `document.activeElement.textContent`))
	b.screenshot("license-delete-confirmation")
	b.run("cancel", chromedp.Click(chromedp.CSS(`#delete-dialog button[value="cancel"]`)))
	b.waitFor("the dialog gone", `document.getElementById('delete-dialog') === null`)
	p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusOK)
	// The page's refresh may ask for the license as it goes.
	b.allow("/v1/admin/licenses/"+licID, http.StatusNotFound)
	b.run("delete", chromedp.Click(chromedp.CSS("#license-delete")))
	b.waitFor("the confirmation", `document.querySelector('#delete-dialog[open]') !== null`)
	b.run("confirm", chromedp.Click(chromedp.CSS("#delete-dialog-confirm")))
	b.waitFor("the overview says so", `location.hash === '#/' && (document.getElementById('flash') || {}).textContent === 'Deleted Render Farm EU (`+licID+`); 1 live leases revoked.'`)
	b.waitFor("the license gone", fmt.Sprintf(`document.querySelector('tr[data-license-id="%s"]') !== null && document.querySelector('tr[data-license-id="%s"]') === null`, twin, licID))
	p.do(t, "GET", "/v1/admin/licenses/"+licID, p.OperatorKey, nil).requireCode(t, http.StatusNotFound)
	fits("overview")
	b.screenshot("overview-deleted")
}

// consoleWebhooks adds a webhook endpoint in the console (its secret shown
// once, and what the API answers shown as text, never markup), sees a
// license change delivered in its log, replays it (the receiver gets the
// same webhook-id again), disables and enables it and deletes it after a
// confirmation, each step checked through the API.
func consoleWebhooks(t *testing.T, p *proc, b *browser, fits func(string)) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{} // webhook-id -> requests
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.Header.Get("webhook-id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	received := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return got[id]
	}

	const markup = `<img src=x onerror="document.title='owned'"> billing`
	b.run("open webhooks", chromedp.Click(chromedp.CSS(`#nav a[data-page="webhooks"]`)))
	b.waitFor("the form", `document.getElementById('webhook-url') !== null && document.querySelector('#webhooks .empty') !== null`)
	b.run("add an endpoint", chromedp.SetValue(chromedp.CSS("#webhook-url"), receiver.URL+"/hooks"),
		chromedp.SetValue(chromedp.CSS("#webhook-types"), "license.created, license.updated"),
		chromedp.SetValue(chromedp.CSS("#webhook-description"), markup),
		chromedp.Click(chromedp.CSS("#webhook-create")))
	secret := pollFor[string](b, "the secret", `(document.getElementById('webhook-secret') || {}).value`)
	require.Regexp(t, `^whsec_`, secret)
	epID := pollFor[string](b, "the endpoint's row", `(document.querySelector('#webhooks tr[data-endpoint-id]') || {dataset: {}}).dataset.endpointId`)
	eps := p.do(t, "GET", "/v1/admin/webhooks", p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["endpoints"].([]any)
	require.Len(t, eps, 1)
	ep := eps[0].(map[string]any)
	require.Equal(t, epID, ep["id"])
	require.Equal(t, []any{"license.created", "license.updated"}, ep["types"])
	require.Equal(t, markup, ep["description"])
	require.Equal(t, markup, eval[string](b, `document.querySelector('#webhooks tr[data-endpoint-id] td:nth-of-type(2)').textContent`), "the description, as text")
	require.Zero(t, eval[int](b, `document.querySelectorAll('#main img').length`), "no markup from the API")
	require.NotContains(t, eval[string](b, `document.getElementById('webhooks').innerText`), secret, "the list never shows the secret")
	b.requireLabelled("webhooks")
	fits("webhooks")
	b.screenshot("webhook-created")

	// A license created: delivered, and in the log.
	lic := consoleLicense(t, p, map[string]any{"name": "Hooked", "seats": 1}).str(t, "id")
	b.run("open its log", chromedp.Click(chromedp.CSS(`#webhooks tr[data-endpoint-id] button[aria-label^="Delivery log"]`)))
	b.waitFor("the log", `document.getElementById('webhook-log-reload') !== null`)
	var eventID string
	eventually(t, eventTimeout, "the delivery of license.created in the log", func() bool {
		b.run("reload the log", chromedp.Click(chromedp.CSS("#webhook-log-reload")))
		b.waitFor("the log loaded", `document.querySelector('#webhook-deliveries .loading') === null`)
		eventID = eval[string](b, `(() => { const r = document.querySelector('#webhook-deliveries tr[data-state="delivered"][data-event-type="license.created"]'); return r ? r.querySelector('.event-id').textContent : ''; })()`)
		return eventID != ""
	})
	require.Equal(t, 1, received(eventID), "the receiver got it")
	// An event written before the endpoint was created but not yet fanned
	// out (the deliverer looks every second) goes to it too: the earlier
	// steps' license.updated may be in the log beside this one.
	var created []map[string]any
	for _, d := range p.do(t, "GET", "/v1/admin/webhooks/"+epID+"/deliveries", p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["deliveries"].([]any) {
		if d := d.(map[string]any); d["eventType"] == "license.created" {
			created = append(created, d)
		}
	}
	require.Len(t, created, 1)
	require.Contains(t, created[0]["payload"], lic)
	require.Equal(t, eventID, created[0]["eventId"])
	fits("webhook log")
	b.screenshot("webhook-delivered")

	// Replayed: the same event id again.
	b.run("replay it", chromedp.Click(chromedp.CSS(`#webhook-deliveries tr[data-state="delivered"] button`)))
	b.waitFor("the replay said", `(document.querySelector('#webhook-log-status .ok') || {}).textContent === 'license.created `+eventID+` is sent again.'`)
	eventually(t, eventTimeout, "the replay received", func() bool { return received(eventID) == 2 })

	// Disabled, enabled, deleted.
	b.run("disable it", chromedp.Click(chromedp.CSS(`#webhooks tr[data-endpoint-id] button[aria-label^="Disable"]`)))
	b.waitFor("disabled", `(document.querySelector('#webhooks tr[data-endpoint-id]') || {dataset: {}}).dataset.state === 'disabled'`)
	require.Equal(t, true, p.do(t, "GET", "/v1/admin/webhooks/"+epID, p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["endpoint"].(map[string]any)["disabled"])
	b.run("enable it", chromedp.Click(chromedp.CSS(`#webhooks tr[data-endpoint-id] button[aria-label^="Enable"]`)))
	b.waitFor("enabled", `(document.querySelector('#webhooks tr[data-endpoint-id]') || {dataset: {}}).dataset.state === 'enabled'`)
	b.run("delete it", chromedp.Click(chromedp.CSS(`#webhooks tr[data-endpoint-id] button[aria-label^="Delete"]`)))
	b.waitFor("the confirmation", `document.querySelector('#webhook-delete-dialog[open]') !== null`)
	require.Equal(t, "Cancel", eval[string](b, `document.activeElement.textContent`), "the safe choice has the focus")
	b.run("confirm", chromedp.Click(chromedp.CSS("#webhook-delete-dialog-confirm")))
	b.waitFor("gone", `document.querySelector('#webhooks tr[data-endpoint-id]') === null && document.getElementById('webhook-log').hidden`)
	require.Empty(t, p.do(t, "GET", "/v1/admin/webhooks", p.OperatorKey, nil).requireCode(t, http.StatusOK).JSON["endpoints"])
	require.NotEqual(t, "owned", eval[string](b, `document.title`))
}

// headingShortID is the short id in the license page's heading.
func headingShortID(b *browser) string {
	return eval[string](b, `document.querySelector('h1 .short-id').textContent`)
}

// overflowing is the JavaScript naming the text past the viewport's right
// edge outside the tables' own scrolling regions (why a page does not fit).
const overflowing = `(() => {
	const out = [];
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		const r = document.createRange();
		r.selectNodeContents(n);
		const right = r.getBoundingClientRect().right;
		if (right > document.documentElement.clientWidth && !n.parentElement.closest('.table-wrap')) {
			out.push(n.parentElement.tagName + '#' + n.parentElement.id + ' ' + right + ': ' + n.textContent.slice(0, 40));
		}
	}
	return out.slice(0, 6);
})()`
