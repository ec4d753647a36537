package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The console tests drive Debian's Chromium, headless, through the
// DevTools protocol (chromedp). Every test's browser has a fresh profile
// and flags that keep it from calling any host but seatd.

const (
	// browserStepTimeout bounds one browser step (a -race seatd and
	// Chromium on a loaded 2-core machine are slow).
	browserStepTimeout = 90 * time.Second
	// waitTimeout bounds one wait for the page to show something.
	waitTimeout = 60 * time.Second
	// artifactsEnv names the directory the console tests save their
	// screenshots in; by default e2e/artifacts (ignored by git).
	artifactsEnv = "SEATD_TEST_ARTIFACTS"
)

// chromiumPath finds Chromium. A missing browser fails the test: the
// console tests are part of make test (scripts/preflight.sh installs
// Debian's chromium).
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is needed for the console tests: sudo apt-get install -y chromium (make test's preflight does this as root)")
	return ""
}

// browser is one headless Chromium with one tab, watching the page for
// console errors, uncaught exceptions and failed requests.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	shots     int

	mu       sync.Mutex
	problems []string
	allowed  []allowance
	urls     map[network.RequestID]string
}

// allowance is a failed request a test causes on purpose: a URL
// containing path answered with status.
type allowance struct {
	path   string
	status int
}

// newBrowser starts Chromium with a width × height viewport.
func newBrowser(t *testing.T, width, height int64) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // as root, Chromium's sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers' /dev/shm is small
		chromedp.Flag("password-store", "basic"),
		// Overlay scrollbars: the layout is as wide as the viewport, and
		// a full-page screenshot (which grows the viewport to the page)
		// does not lay the page out anew without one.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(width), int(height)),
	}
	b := &browser{t: t, artifacts: artifactsDir(t), urls: map[network.RequestID]string{}}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var done atomic.Bool
	logf := func(format string, args ...any) {
		if !done.Load() {
			t.Logf("chromedp: "+format, args...)
		}
	}
	// The listener sees the tab's events from its start on.
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf), chromedp.WithListener(b.watch))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for Chromium to exit
		done.Store(true)
	})
	b.ctx = ctx
	// The first Run starts Chromium and lives as long as ctx: no timeout
	// on it (that would stop the browser); each later step has one.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, height)), "start Chromium")
	t.Cleanup(b.requireClean)
	return b
}

// artifactsDir is this test's screenshot directory: $SEATD_TEST_ARTIFACTS
// (default e2e/artifacts)/<test name>, emptied first.
func artifactsDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv(artifactsEnv)
	if root == "" {
		root = "artifacts"
	}
	dir, err := filepath.Abs(filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_")))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// allow lets one kind of failed request happen: the test causes it.
func (b *browser) allow(path string, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, allowance{path: path, status: status})
}

func (b *browser) isAllowed(url string, status int) bool {
	for i := range b.allowed {
		if a := b.allowed[i]; a.status == status && strings.Contains(url, a.path) {
			return true
		}
	}
	return false
}

var failedResourceStatus = regexp.MustCompile(`status of (\d{3})`)

// watch records what must not happen on a console page.
func (b *browser) watch(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *cdpruntime.EventConsoleAPICalled:
		if e.Type == cdpruntime.ConsoleAPICalledTypeError || e.Type == cdpruntime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				if a.Value != nil {
					args = append(args, string(a.Value))
				} else {
					args = append(args, a.Description)
				}
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *cdpruntime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError {
			return
		}
		// "Failed to load resource: … status of 401" for a call the test
		// made fail on purpose is not a problem; everything else is.
		if m := failedResourceStatus.FindStringSubmatch(e.Entry.Text); m != nil {
			var status int
			_, _ = fmt.Sscan(m[1], &status)
			if b.isAllowed(e.Entry.URL, status) {
				return
			}
		}
		b.problems = append(b.problems, fmt.Sprintf("browser log error (%s) %s: %s", e.Entry.Source, e.Entry.URL, e.Entry.Text))
	case *network.EventRequestWillBeSent:
		b.urls[e.RequestID] = e.Request.Method + " " + e.Request.URL
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 && !b.isAllowed(e.Response.URL, int(e.Response.Status)) {
			b.problems = append(b.problems, fmt.Sprintf("request failed: %s → HTTP %d", b.urls[e.RequestID], e.Response.Status))
		}
	case *network.EventLoadingFailed:
		// A call the page aborted itself (the admin left the page) is
		// not a failure; a refused, reset or blocked one is.
		if !e.Canceled {
			b.problems = append(b.problems, fmt.Sprintf("request failed: %s: %s %s", b.urls[e.RequestID], e.ErrorText, e.BlockedReason))
		}
	}
}

// requireClean fails the test for every problem the page had.
func (b *browser) requireClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("console page: %s", p)
	}
	b.problems = nil
}

// step is one browser step's context.
func (b *browser) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, browserStepTimeout)
}

// run runs chromedp actions, failing the test with what on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage text:\n%s", what, err, b.text())
	}
}

// text is the page's visible text (for failure messages).
func (b *browser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return fmt.Sprintf("(cannot read the page: %v)", err)
	}
	return s
}

// waitFor polls the JavaScript expression until it is truthy.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	pollFor[chromedp.Void](b, what, expr)
}

// pollFor polls the JavaScript expression until it is truthy and answers
// its value. what says what the test waits for.
func pollFor[T any](b *browser, what, expr string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(waitTimeout)))
	if err != nil {
		b.mu.Lock()
		problems := strings.Join(b.problems, "\n")
		b.mu.Unlock()
		b.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s\nproblems so far:\n%s", what, expr, err, b.text(), problems)
	}
	return v
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage text:\n%s", expr, err, b.text())
	}
	return v
}

// screenshot saves the whole page as <n>-<name>.png in the test's
// artifacts directory and logs where.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err, "screenshot %s", name)
	b.shots++
	path := filepath.Join(b.artifacts, fmt.Sprintf("%02d-%s.png", b.shots, name))
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s", path)
	return path
}
