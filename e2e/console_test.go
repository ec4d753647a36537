package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The web console (/ui/, server/console) in a real browser: headless
// Chromium driven by chromedp (console_browser_test.go). Every test fails
// on any console error, uncaught exception or failed request the test did
// not cause on purpose, and saves a screenshot of each page it visits in
// $SEATD_TEST_ARTIFACTS (default e2e/artifacts)/<test name>/.

// consoleLicense creates a license over REST and answers it.
func consoleLicense(t *testing.T, p *proc, body map[string]any) httpResp {
	t.Helper()
	return p.do(t, "POST", "/v1/admin/licenses", p.OperatorKey, body).requireCode(t, http.StatusOK)
}

// consoleAcquire takes a seat over REST and answers the lease id.
func consoleAcquire(t *testing.T, p *proc, key, user, host string) httpResp {
	t.Helper()
	return p.do(t, "POST", "/v1/leases", "", map[string]any{
		"licenseKey": key, "fingerprint": "fp-" + user, "user": user, "hostname": host,
	}).requireCode(t, http.StatusOK)
}

// signIn opens the console and signs in with key.
func (b *browser) signIn(p *proc, key string) {
	b.t.Helper()
	b.run("open the console", chromedp.Navigate(p.url("/ui/")), chromedp.WaitVisible(chromedp.CSS("#signin #key")))
	b.run("sign in", chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)))
}

// inUse is the JavaScript for a license's "in use / seats" text on the
// overview.
func inUse(licenseID string) string {
	return fmt.Sprintf(`(document.querySelector('tr[data-license-id="%s"] .seats-cell .in-use') || {}).textContent`, licenseID)
}

// clickNow clicks the element sel finds in one step of the page's own
// JavaScript: a page that refreshes (the overview, every 5 s) may replace
// the element between a DevTools query and its click.
func (b *browser) clickNow(what, sel string) {
	b.t.Helper()
	if !eval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (e) e.click(); return e !== null; })()`, sel)) {
		b.t.Fatalf("%s: nothing at %s\npage text:\n%s", what, sel, b.text())
	}
}

// requireLabelled checks that every control on the page has a name a
// screen reader can say.
func (b *browser) requireLabelled(page string) {
	b.t.Helper()
	unnamed := eval[[]string](b, `[...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
		.filter((e) => e.offsetParent !== null || e.tagName === 'MAIN')
		.filter((e) => !((e.labels && e.labels.length) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') ||
			(e.textContent || '').trim()))
		.map((e) => e.outerHTML.slice(0, 120))`)
	require.Empty(b.t, unnamed, "%s: controls without an accessible name", page)
}

// TestConsoleSignInSeatsRevokeAndUsage walks the console as an admin does:
// sign in with the operator key, see the licenses, watch a seat taken
// through the API show as 1/N within one refresh, revoke it from the
// license page (by keyboard, after a confirmation) and see the API report
// it revoked, change the seats, then find today's bars on the usage and
// zombie charts.
func TestConsoleSignInSeatsRevokeAndUsage(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	today := time.Now().UTC().Format("2006-01-02")

	acme := consoleLicense(t, p, map[string]any{"name": "ACME CAD", "seats": 3, "leaseTtl": "300s"})
	globex := consoleLicense(t, p, map[string]any{"name": "Globex Simulator", "seats": 2, "leaseTtl": "300s"})
	initech := consoleLicense(t, p, map[string]any{"name": "Initech Reports", "seats": 5, "leaseTtl": "1s"})
	consoleLicense(t, p, map[string]any{"name": "Umbrella Legacy", "seats": 10, "active": false,
		"expiresAt": time.Now().Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339)})
	acmeID, globexID, initechID := acme.str(t, "id"), globex.str(t, "id"), initech.str(t, "id")

	// Globex: full, and one acquisition refused (a denial on the usage
	// chart). Initech: a lease left to lapse and cleaned up (a zombie).
	consoleAcquire(t, p, globex.str(t, "key"), "bob", "ws-bob")
	consoleAcquire(t, p, globex.str(t, "key"), "carol", "ws-carol")
	p.do(t, "POST", "/v1/leases", "", map[string]any{"licenseKey": globex.str(t, "key"), "fingerprint": "fp-dave", "user": "dave"}).
		requireCode(t, http.StatusTooManyRequests)
	consoleAcquire(t, p, initech.str(t, "key"), "erin", "laptop-erin")
	eventually(t, eventTimeout, "erin's 1 s lease past its deadline", func() bool {
		r := p.do(t, "GET", "/v1/admin/licenses/"+initechID+"/leases?state=LEASE_STATE_EXPIRED", p.OperatorKey, nil)
		leases, _ := r.JSON["leases"].([]any)
		return len(leases) == 1
	})
	run := p.do(t, "POST", "/v1/admin/cleanup", p.OperatorKey, map[string]any{}).requireCode(t, http.StatusOK)
	require.Equal(t, 1.0, run.num(t, "run.expired"), "cleanup found erin's zombie")

	b := newBrowser(t, 1280, 860)

	// Sign in.
	b.run("open the console", chromedp.Navigate(p.url("/ui/")), chromedp.WaitVisible(chromedp.CSS("#signin #key")))
	b.requireLabelled("sign-in")
	b.screenshot("signin")
	b.run("sign in", chromedp.SendKeys(chromedp.CSS("#key"), p.OperatorKey),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)))

	// The overview lists the licenses; ACME has none of its 3 seats taken.
	b.waitFor("ACME CAD at 0 / 3", inUse(acmeID)+` === '0 / 3'`)
	started := eval[int](b, `Number(document.getElementById('main').dataset.loadsStarted)`)

	// A seat taken through the API shows within one refresh: the first
	// load that starts after the acquisition shows it.
	alice := consoleAcquire(t, p, acme.str(t, "key"), "alice", "ws-alice")
	startedAfter := eval[int](b, `Number(document.getElementById('main').dataset.loadsStarted)`)
	shownBy := pollFor[int](b, "ACME CAD at 1 / 3", `(`+inUse(acmeID)+` === '1 / 3') && Number(document.getElementById('main').dataset.loadsDone)`)
	require.LessOrEqual(t, shownBy, startedAfter+1,
		"1 / 3 first shown by load %d; the first load started after the acquisition was %d (loads started before it: %d)", shownBy, startedAfter+1, started)
	globexInUse := eval[string](b, inUse(globexID))
	require.Equal(t, "2 / 2", globexInUse)
	b.waitFor("the cleanup leader", `document.querySelector('#cleanup dl') !== null`)
	cleanupText := eval[string](b, `document.getElementById('cleanup').innerText`)
	require.Contains(t, cleanupText, "(this instance)")
	require.Contains(t, cleanupText, "manual, 1 expired of 1 scanned")
	b.requireLabelled("overview")
	b.screenshot("overview")

	// The license page lists alice's lease.
	leaseID := alice.str(t, "lease.id")
	row := fmt.Sprintf(`tr[data-lease-id="%s"]`, leaseID)
	b.clickNow("open ACME CAD", fmt.Sprintf(`tr[data-license-id="%s"] th a`, acmeID))
	b.waitFor("alice's lease", fmt.Sprintf(`document.querySelector('%s') !== null`, row))
	rowText := eval[string](b, fmt.Sprintf(`document.querySelector('%s').innerText`, row))
	require.Contains(t, rowText, "alice")
	require.Contains(t, rowText, "ws-alice")
	require.Contains(t, rowText, "fp-alice")
	b.requireLabelled("license")
	b.screenshot("license")

	// Revoke it by keyboard: Enter on its button opens the confirmation
	// with Cancel focused; Tab reaches Revoke; Enter revokes.
	b.run("focus Revoke", chromedp.Focus(chromedp.CSS(row+` button`)), chromedp.KeyEvent("\r"))
	b.waitFor("the confirmation", `document.querySelector('#revoke-dialog[open]') !== null`)
	focused := eval[string](b, `document.activeElement.textContent`)
	require.Equal(t, "Cancel", focused, "the safe choice has the focus")
	b.screenshot("revoke-confirmation")
	b.run("Tab to Revoke", chromedp.KeyEvent("\t"))
	focused = eval[string](b, `document.activeElement.id`)
	require.Equal(t, "revoke-confirm", focused)
	b.run("press Revoke", chromedp.KeyEvent("\r"))
	b.waitFor("the revocation's answer", `(document.querySelector('#lease-action .ok') || {}).textContent === 'Lease `+leaseID+` is revoked.'`)
	b.waitFor("the lease gone from the active leases", fmt.Sprintf(`document.querySelector('%s') === null && document.getElementById('license-in-use').textContent === '0 / 3'`, row))

	// The API reports it revoked, and its holder's next heartbeat fails.
	leases := p.do(t, "GET", "/v1/admin/licenses/"+acmeID+"/leases", p.OperatorKey, nil).requireCode(t, http.StatusOK)
	first := leases.JSON["leases"].([]any)[0].(map[string]any)
	require.Equal(t, leaseID, first["id"])
	require.Equal(t, "LEASE_STATE_REVOKED", first["state"])
	beat := p.do(t, "POST", "/v1/leases/"+leaseID+":heartbeat", "", map[string]any{"leaseToken": alice.str(t, "leaseToken")})
	require.Equal(t, "LEASE_REVOKED", beat.errorReason(), "heartbeat after the revocation: %s", beat.Raw)

	// Change the seats from 3 to 4 and the TTL from 5 to 10 minutes: the
	// TTL is entered in the unit it is shown in.
	require.Equal(t, []string{"5", "min"}, eval[[]string](b, `[document.getElementById('edit-ttl').value, document.getElementById('edit-ttl-unit').value]`))
	b.run("edit the seats", chromedp.SetValue(chromedp.CSS("#edit-seats"), "4"), chromedp.SetValue(chromedp.CSS("#edit-ttl"), "10"),
		chromedp.Click(chromedp.CSS("#edit-save")))
	b.waitFor("the save", `(document.querySelector('#edit-status .ok') || {}).textContent === 'Saved: 4 seats, lease TTL 10 min, active, no borrowing.'`)
	got := p.do(t, "GET", "/v1/admin/licenses/"+acmeID, p.OperatorKey, nil).requireCode(t, http.StatusOK)
	require.Equal(t, 4.0, got.num(t, "seats"))
	require.Equal(t, "600s", got.str(t, "leaseTtl"))

	// Usage: today's bars. ACME: alice's seat (peak 1 of the 4 seats now).
	b.run("open the usage page", chromedp.Click(chromedp.CSS(`a[href^="#/usage/"]`)))
	todayBar := func(series string) string {
		return fmt.Sprintf(`(document.querySelector('#usage-chart rect.bar[data-series="%s"][data-date="%s"]') || {dataset: {}}).dataset.value`, series, today)
	}
	b.waitFor("ACME's peak bar for today", todayBar("peak")+` === '1'`)
	bars := eval[int](b, `document.querySelectorAll('#usage-chart rect.bar-peak').length`)
	require.Equal(t, 30, bars, "one peak bar a day for 30 days")
	// Globex, chosen in the license list: both seats held today (the
	// limit) and one acquisition refused.
	// (SetValue sends the input and change events a person's choice does.)
	b.run("choose Globex", chromedp.SetValue(chromedp.CSS("#usage-license"), globexID))
	b.waitFor("Globex's bars for today", todayBar("peak")+` === '2' && `+todayBar("denials")+` === '1'`)
	limitLabel := eval[string](b, `document.querySelector('#usage-chart .limit-label').textContent`)
	require.Equal(t, "limit 2 seats", limitLabel)
	b.requireLabelled("usage")
	b.screenshot("usage")

	// Zombies: erin's lease, cleaned up today.
	b.run("open the zombies page", chromedp.Click(chromedp.CSS(`#nav a[data-page="zombies"]`)))
	b.waitFor("today's zombie bar", fmt.Sprintf(`(document.querySelector('#zombie-chart rect.bar-zombies[data-date="%s"]') || {dataset: {}}).dataset.value === '1'`, today))
	top := eval[string](b, fmt.Sprintf(`document.querySelector('#zombies tr[data-license-id="%s"]').innerText`, initechID))
	require.Contains(t, top, "Initech Reports")
	b.requireLabelled("zombies")
	b.screenshot("zombies")
}

// noSideScroll is the JavaScript that holds when the page fits the
// viewport's width (wide tables scroll inside their own region).
const noSideScroll = `document.documentElement.scrollWidth <= document.documentElement.clientWidth`

// TestConsoleShowsAPIErrorsAsStated: on a 375 px wide screen, a wrong key,
// an API key's refused cleanup status and a refused license change are
// shown in the API's own words, and every page fits the width.
func TestConsoleShowsAPIErrorsAsStated(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	p.do(t, "POST", "/v1/admin/tenants", p.OperatorKey, map[string]any{"id": "acme-corp", "name": "ACME Corp"}).requireCode(t, http.StatusOK)
	apiKey := p.do(t, "POST", "/v1/admin/tenants/acme-corp/api-keys", p.OperatorKey, map[string]any{"name": "console"}).
		requireCode(t, http.StatusOK).str(t, "secret")
	lic := p.do(t, "POST", "/v1/admin/licenses", apiKey, map[string]any{
		"name": "ACME Corp — CAD Pro, floating", "seats": 25, "maxBorrowDuration": "86400s", "maxBorrowedSeats": 2,
	}).requireCode(t, http.StatusOK)
	licID := lic.str(t, "id")
	consoleAcquire(t, p, lic.str(t, "key"), "frank.with.a.long.user.name@example.com", "build-agent-0042.eu-west.example.com")
	// A seat borrowed for offline use cannot be revoked: no Revoke for it.
	borrowed := p.do(t, "POST", "/v1/leases", "", map[string]any{
		"licenseKey": lic.str(t, "key"), "fingerprint": "fp-grace", "user": "grace", "hostname": "laptop-grace", "borrowDuration": "7200s",
	}).requireCode(t, http.StatusOK)

	// What the API says to each, asked directly.
	wrongKey := p.do(t, "GET", "/v1/admin/licenses?pageSize=1", "not-a-key", nil).requireCode(t, http.StatusUnauthorized)
	refusedStatus := p.do(t, "GET", "/v1/admin/cleanup", apiKey, nil).requireCode(t, http.StatusForbidden)
	tooMany := p.do(t, "PATCH", "/v1/admin/licenses/"+licID, apiKey, map[string]any{"seats": 2000000}).
		requireCode(t, http.StatusBadRequest)

	b := newBrowser(t, 375, 812)
	b.allow("/v1/admin/licenses?pageSize=1", http.StatusUnauthorized)
	b.allow("/v1/admin/cleanup", http.StatusForbidden)
	b.allow("/v1/admin/tenants", http.StatusForbidden) // can.js: is this the operator key?
	b.allow("/v1/admin/licenses/"+licID, http.StatusBadRequest)

	b.signIn(p, "not-a-key")
	b.waitFor("the refusal", `document.querySelector('#signin-status .error-message') !== null`)
	require.Equal(t, wrongKey.str(t, "message"), eval[string](b, `document.querySelector('#signin-status .error-message').textContent`))
	require.Equal(t, "HTTP 401 · UNAUTHENTICATED", eval[string](b, `document.querySelector('#signin-status .error-facts').textContent`))
	require.True(t, eval[bool](b, noSideScroll), "the sign-in page fits 375 px")
	b.screenshot("signin-refused")

	// The API key signs in; its tenant's license is there; the cleanup
	// status is the operator's, and the page says so as the API does.
	b.run("sign in with the API key", chromedp.SetValue(chromedp.CSS("#key"), apiKey),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)))
	b.waitFor("the license at 2 / 25", inUse(licID)+` === '2 / 25'`)
	b.waitFor("the cleanup refusal", `document.querySelector('#cleanup .error-message') !== null`)
	require.Equal(t, refusedStatus.str(t, "message"), eval[string](b, `document.querySelector('#cleanup .error-message').textContent`))
	require.True(t, eval[bool](b, noSideScroll), "the overview fits 375 px")
	b.requireLabelled("overview at 375 px")
	b.screenshot("overview-375px")

	// A change the API refuses: its message, verbatim.
	b.clickNow("open the license", fmt.Sprintf(`tr[data-license-id="%s"] th a`, licID))
	b.waitFor("the edit form", `document.getElementById('edit-seats') !== null`)
	graceRow := fmt.Sprintf(`document.querySelector('tr[data-lease-id="%s"]')`, borrowed.str(t, "lease.id"))
	b.waitFor("grace's borrowed lease", graceRow+` !== null`)
	require.True(t, eval[bool](b, graceRow+`.querySelector('button') === null`), "no Revoke for a borrowed seat")
	require.Contains(t, eval[string](b, graceRow+`.innerText`), "cannot be revoked")
	require.Contains(t, eval[string](b, `document.getElementById('license-facts').innerText`), "up to 1 d offline, 2 seats at once")
	b.run("ask for 2,000,000 seats", chromedp.SetValue(chromedp.CSS("#edit-seats"), "2000000"), chromedp.Click(chromedp.CSS("#edit-save")))
	b.waitFor("the refusal", `document.querySelector('#edit-status .error-message') !== null`)
	require.Equal(t, tooMany.str(t, "message"), eval[string](b, `document.querySelector('#edit-status .error-message').textContent`))
	require.Equal(t, "HTTP 400 · INVALID_ARGUMENT", eval[string](b, `document.querySelector('#edit-status .error-facts').textContent`))
	// ... and next to the field it names, which has the focus.
	require.Equal(t, tooMany.str(t, "message"), eval[string](b, `document.getElementById('edit-seats-error').textContent`))
	require.Equal(t, "edit-seats", eval[string](b, `document.activeElement.id`))
	// An API key administers its tenant, not the tenants: no Tenants page
	// offered.
	require.True(t, eval[bool](b, `document.querySelector('#nav a[data-page="tenants"]').parentElement.hidden`))
	require.True(t, eval[bool](b, noSideScroll), "the license page fits 375 px")
	b.screenshot("license-refused-375px")

	for _, page := range []struct{ link, ready string }{
		{"usage", `document.querySelector('#usage-chart rect.bar-peak') !== null`},
		{"zombies", `document.querySelector('#zombie-chart svg') !== null`},
	} {
		b.run("open "+page.link, chromedp.Click(chromedp.CSS(`#nav a[data-page="`+page.link+`"]`)))
		b.waitFor(page.link, page.ready)
		require.True(t, eval[bool](b, noSideScroll), "the %s page fits 375 px; too wide: %v", page.link, eval[[]string](b, overflowing))
		b.screenshot(page.link + "-375px")
	}
}

// TestConsoleShowsFeatureGrants: a license holding feature grants shows,
// on the overview, its use per feature, and on its page a table of its
// grants (feature, version, seats in use / seats, starts, expiry, state)
// and each lease's feature and version, all as text.
func TestConsoleShowsFeatureGrants(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	lic := consoleLicense(t, p, map[string]any{"name": "ACME CAD", "seats": 3, "leaseTtl": "300s"})
	licID, key := lic.str(t, "id"), lic.str(t, "key")
	grant := func(body map[string]any) httpResp {
		t.Helper()
		return p.do(t, "POST", "/v1/admin/licenses/"+licID+"/grants", p.OperatorKey, body).requireCode(t, http.StatusOK)
	}
	soon := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	later := time.Now().Add(90 * 24 * time.Hour).UTC().Truncate(time.Second)
	r2024 := grant(map[string]any{"feature": "render", "version": "2024", "seats": 1, "expiresAt": soon.Format(time.RFC3339)})
	r2025 := grant(map[string]any{"feature": "render", "version": "2025", "seats": 2, "overdraft": 1, "expiresAt": later.Format(time.RFC3339)})
	future := grant(map[string]any{"feature": "sim", "seats": 4, "startsAt": soon.Format(time.RFC3339)})
	lease := p.do(t, "POST", "/v1/leases", "", map[string]any{
		"licenseKey": key, "fingerprint": "fp-ann", "user": "ann", "hostname": "ws-ann", "feature": "render", "version": "2023.4",
	}).requireCode(t, http.StatusOK)
	require.Equal(t, r2024.str(t, "id"), lease.str(t, "lease.grantId"))
	consoleAcquire(t, p, key, "bob", "ws-bob") // the base pool

	b := newBrowser(t, 1280, 860)
	b.signIn(p, p.OperatorKey)

	// The overview: the base pool, and render's use over its grants (sim
	// has not started: none of its seats counts yet).
	feature := func(name string) string {
		return fmt.Sprintf(`(document.querySelector('tr[data-license-id="%s"] .features [data-feature="%s"]') || {}).textContent`, licID, name)
	}
	b.waitFor("render's use", feature("render")+` === 'render 1 / 3 (2 grants)'`)
	require.Equal(t, "1 / 3", eval[string](b, inUse(licID)), "the base pool: bob")
	require.Equal(t, "sim 0 / 0 (no current grant)", eval[string](b, feature("sim")))
	b.requireLabelled("overview with features")
	b.screenshot("overview-features")

	// The license page: a row per grant, in the API's order, as text.
	b.clickNow("open ACME CAD", fmt.Sprintf(`tr[data-license-id="%s"] th a`, licID))
	b.waitFor("the grants table", `document.querySelectorAll('#grants tr[data-grant-id]').length === 3`)
	cells := func(grantID string) []string {
		return eval[[]string](b, fmt.Sprintf(`[...document.querySelector('#grants tr[data-grant-id="%s"]').children].map((c) => c.innerText.trim())`, grantID))
	}
	localTime := func(ts time.Time) string { return ts.Local().Format("2006-01-02 15:04:05") }
	row := cells(r2024.str(t, "id"))
	require.Equal(t, []string{"render", "2024", "1 / 1"}, row[:3])
	require.Equal(t, "at once", row[3])
	require.True(t, strings.HasPrefix(row[4], localTime(soon)), "expiry %q", row[4])
	require.Equal(t, []string{"current", r2024.str(t, "id"), "Edit Delete"}, row[5:])
	row = cells(r2025.str(t, "id"))
	require.Equal(t, []string{"render", "2025", "0 / 2\n+1 overdraft"}, row[:3])
	require.True(t, strings.HasPrefix(row[4], localTime(later)), "expiry %q", row[4])
	row = cells(future.str(t, "id"))
	require.Equal(t, []string{"sim", "all versions", "0 / 4"}, row[:3])
	require.True(t, strings.HasPrefix(row[3], localTime(soon)), "start %q", row[3])
	require.Equal(t, "never", row[4])
	require.Equal(t, "not started", row[5])
	order := eval[[]string](b, `[...document.querySelectorAll('#grants tr[data-grant-id]')].map((r) => r.dataset.grantId)`)
	require.Equal(t, []string{r2024.str(t, "id"), r2025.str(t, "id"), future.str(t, "id")}, order, "the API's order")
	// Text only: the cells hold text and the page's own elements, nothing
	// parsed from the API's strings.
	tags := eval[[]string](b, `[...new Set([...document.querySelectorAll('#grants tbody *')].map((e) => e.tagName.toLowerCase()))].sort()`)
	require.Subset(t, []string{"button", "code", "div", "span", "td", "th", "time", "tr"}, tags)

	// Each lease's feature and version.
	leaseRow := func(id string) string {
		return eval[string](b, fmt.Sprintf(`document.querySelector('tr[data-lease-id="%s"] td.feature').textContent`, id))
	}
	b.waitFor("the leases", `document.querySelectorAll('#leases tr[data-lease-id]').length === 2`)
	require.Equal(t, "render 2023.4", leaseRow(lease.str(t, "lease.id")))
	bobLease := eval[string](b, `[...document.querySelectorAll('#leases tr[data-lease-id]')].find((r) => r.innerText.includes('ws-bob')).dataset.leaseId`)
	require.Equal(t, "base", leaseRow(bobLease))
	// The leases of one feature.
	b.run("choose render", chromedp.SetValue(chromedp.CSS("#lease-feature"), "render"))
	b.waitFor("render's leases only", fmt.Sprintf(`document.querySelectorAll('#leases tr[data-lease-id]').length === 1 && `+
		`document.querySelector('#leases tr[data-lease-id="%s"]') !== null`, lease.str(t, "lease.id")))
	require.Contains(t, eval[string](b, `document.getElementById('license-facts').innerText`), "1 / 3 of the base pool")
	b.requireLabelled("license with features")
	b.screenshot("license-features")
}

// TestConsoleShowsThePolicyAndWhoHoldsReservedSeats: the license page
// shows the site policy a row per rule and per priority, the groups it
// names with their members, and the live leases holding reserved seats
// under the reservation each took (a host reservation matched without
// case); names holding markup show as text. A released reserved seat leaves the list
// within a refresh.
func TestConsoleShowsThePolicyAndWhoHoldsReservedSeats(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	lic := consoleLicense(t, p, map[string]any{"name": "ACME CAD", "seats": 4, "leaseTtl": "300s"})
	licID, key := lic.str(t, "id"), lic.str(t, "key")
	const night, ann = "<b>night", "<b>ann</b>"
	p.do(t, "PUT", "/v1/admin/groups/"+url.PathEscape(night), p.OperatorKey, map[string]any{
		"kind": "KIND_USERS", "members": []string{ann, "bob"},
	}).requireCode(t, http.StatusOK)
	p.do(t, "PUT", "/v1/admin/groups/designers", p.OperatorKey, map[string]any{
		"kind": "KIND_USERS", "members": []string{"dora"},
	}).requireCode(t, http.StatusOK)
	subject := func(kind, name string) map[string]any { return map[string]any{"kind": kind, "name": name} }
	p.do(t, "PUT", "/v1/admin/licenses/"+licID+"/policy", p.OperatorKey, map[string]any{"rules": []any{
		map[string]any{"kind": "KIND_RESERVE", "count": 1, "subject": subject("KIND_GROUP", night)},
		map[string]any{"kind": "KIND_RESERVE", "count": 1, "subject": subject("KIND_HOST", "WS-9")},
		map[string]any{"kind": "KIND_MAX", "count": 1, "subject": subject("KIND_USER", "carol")},
		map[string]any{"kind": "KIND_EXCLUDE", "subject": subject("KIND_USER", "<i>intern")},
	}, "priorities": []any{
		map[string]any{"level": 10, "subject": subject("KIND_GROUP", "designers")},
		map[string]any{"level": -1, "subject": subject("KIND_GROUP", night)},
	}}).requireCode(t, http.StatusOK)

	annLease := consoleAcquire(t, p, key, ann, "ws-ann")
	require.Equal(t, night, annLease.str(t, "lease.reservedFor.name"), "night's reserved seat")
	carol := consoleAcquire(t, p, key, "carol", "ws-carol")
	dave := consoleAcquire(t, p, key, "dave", "ws-9")
	require.Equal(t, "ws-9", dave.str(t, "lease.reservedFor.name"), "the host's reserved seat, in lower case")

	b := newBrowser(t, 1280, 1000)
	b.signIn(p, p.OperatorKey)
	b.waitFor("ACME CAD on the overview", inUse(licID)+` === '3 / 4'`)
	b.clickNow("open ACME CAD", fmt.Sprintf(`tr[data-license-id="%s"] th a`, licID))
	b.waitFor("the policy's rules", `document.querySelectorAll('#policy .policy-lines tr[data-line="rule"]').length === 4`)

	cells := func(sel string) [][]string {
		return eval[[][]string](b, fmt.Sprintf(`[...document.querySelectorAll('%s')].map((r) => [...r.children].map((c) => c.innerText.trim()))`, sel))
	}
	require.Equal(t, [][]string{
		{"base pool", "reserve 1", "group " + night, "1 of 1 taken"},
		{"base pool", "reserve 1", "host WS-9", "1 of 1 taken"},
		{"base pool", "max 1", "user carol", "—"},
		{"base pool", "exclude", "user <i>intern", "—"},
		{"base pool", "priority 10", "group designers", "—"},
		{"base pool", "priority -1", "group " + night, "—"},
	}, cells(`#policy .policy-lines tbody tr`))
	require.Equal(t, [][]string{{night, "users", ann + ", bob"}, {"designers", "users", "dora"}}, cells(`#policy .policy-groups tbody tr`),
		"the groups the rules name, then those only a priority names")

	// Who holds the reserved seats: ann for night, dave for the host;
	// carol's shared seat is not among them.
	holders := func() map[string]string {
		out := map[string]string{}
		for _, row := range eval[[][]string](b, `[...document.querySelectorAll('#policy .holders tbody tr')].map((r) => [r.dataset.leaseId, r.querySelector('th').innerText.trim(), r.querySelector('.user').innerText])`) {
			out[row[0]] = row[1] + " | " + row[2]
		}
		return out
	}
	require.Equal(t, map[string]string{
		annLease.str(t, "lease.id"): "group " + night + "\nof the base pool | " + ann,
		dave.str(t, "lease.id"):     "host WS-9\nof the base pool | dave",
	}, holders())
	require.NotContains(t, holders(), carol.str(t, "lease.id"))

	// Text only: the names holding markup made no element, and the
	// section holds only the page's own elements.
	require.Equal(t, 0, eval[int](b, `document.querySelectorAll('#policy b, #policy i').length`))
	tags := eval[[]string](b, `[...new Set([...document.querySelectorAll('#policy *')].map((e) => e.tagName.toLowerCase()))].sort()`)
	require.Subset(t, []string{"caption", "code", "dd", "div", "dl", "dt", "h3", "span", "table", "tbody", "td", "th", "thead", "time", "tr"}, tags)
	b.requireLabelled("license with a policy")
	b.screenshot("license-policy")

	// ann gives her seat back: it leaves the list at the next refresh.
	p.do(t, "POST", "/v1/leases/"+annLease.str(t, "lease.id")+":release", "", map[string]any{
		"leaseToken": annLease.str(t, "leaseToken"),
	}).requireCode(t, http.StatusOK)
	b.waitFor("night's seat free", `(document.querySelector('#policy .policy-lines tr[data-index="0"] .use') || {}).textContent === '0 of 1 taken'`)
	require.Equal(t, map[string]string{dave.str(t, "lease.id"): "host WS-9\nof the base pool | dave"}, holders())
}
