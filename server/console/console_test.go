package console

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// files lists the embedded files by path ("js/main.js").
func files(t *testing.T) []string {
	t.Helper()
	var out []string
	require.NoError(t, fs.WalkDir(Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	}))
	return out
}

func TestEveryFileIsServedWithItsTypeAndTheHeaders(t *testing.T) {
	t.Parallel()
	h := Handler()
	types := map[string]string{
		".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
	}
	all := files(t)
	require.Contains(t, all, "index.html")
	for _, name := range all {
		target := Prefix + name
		if name == "index.html" {
			target = Prefix // Prefix+"index.html" redirects here
		}
		rec := get(t, h, target)
		require.Equal(t, http.StatusOK, rec.Code, name)
		want, err := fs.ReadFile(Files(), name)
		require.NoError(t, err)
		require.Equal(t, want, rec.Body.Bytes(), name)
		require.Equal(t, types[path.Ext(name)], rec.Header().Get("Content-Type"), name)
		require.Equal(t, ContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"), name)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), name)
		require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), name)
		require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"), name)

		// The ETag makes a revalidation cheap.
		etag := rec.Header().Get("ETag")
		require.NotEmpty(t, etag, name)
		again := get(t, h, target, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, again.Code, name)
	}
}

func TestNothingElseIsServed(t *testing.T) {
	t.Parallel()
	h := Handler()
	for _, p := range []string{"js/", "js/pages/", "nope.js", "../console.go", "static/index.html"} {
		require.Equal(t, http.StatusNotFound, get(t, h, Prefix+p).Code, p)
	}
	rec := get(t, h, Prefix+"index.html")
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	require.Equal(t, "./", rec.Header().Get("Location"))
}

func TestThePolicyAllowsNoInlineScriptAndNoOtherHost(t *testing.T) {
	t.Parallel()
	directives := map[string]string{}
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	require.Equal(t, "'none'", directives["default-src"])
	for _, d := range []string{"script-src", "style-src", "img-src", "connect-src"} {
		require.Equal(t, "'self'", directives[d], d)
	}
	require.Equal(t, "'none'", directives["frame-ancestors"])
	require.Equal(t, "'script'", directives["require-trusted-types-for"])
}

// TestPagesHaveNoInlineScriptOrStyle: what the policy would refuse in a
// browser is not in the files either (the browser test fails on the
// refusal too, but only for the pages it opens).
func TestPagesHaveNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	for _, name := range files(t) {
		if path.Ext(name) != ".html" {
			continue
		}
		data, err := fs.ReadFile(Files(), name)
		require.NoError(t, err)
		doc, err := html.Parse(bytes.NewReader(data))
		require.NoError(t, err, name)
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				attrs := map[string]string{}
				for _, a := range n.Attr {
					attrs[a.Key] = a.Val
					require.False(t, strings.HasPrefix(a.Key, "on"), "%s: <%s %s>: an inline event handler", name, n.Data, a.Key)
					require.NotEqual(t, "style", a.Key, "%s: <%s>: an inline style", name, n.Data)
					require.False(t, strings.HasPrefix(strings.TrimSpace(a.Val), "javascript:"), "%s: a javascript: URL", name)
				}
				require.NotEqual(t, "style", n.Data, "%s: a <style> element", name)
				if n.Data == "script" {
					require.NotEmpty(t, attrs["src"], "%s: an inline <script>", name)
					require.Equal(t, "module", attrs["type"], "%s: scripts are modules", name)
					require.Nil(t, n.FirstChild, "%s: a <script src> with a body", name)
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
	}
}

var (
	// anyURL finds absolute URLs; the SVG namespace names, it fetches nothing.
	anyURL    = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s'"]*`)
	svgNS     = "http://www.w3.org/2000/svg"
	importRE  = regexp.MustCompile(`(?m)^import .* from '([^']+)';$`)
	htmlSinks = regexp.MustCompile(`\.innerHTML|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setAttribute\('style'`)
)

// TestNoOtherHostAndNoHTMLSinks: the console loads nothing from any other
// host (air-gapped networks), imports only modules it embeds, and never
// parses text as HTML.
func TestNoOtherHostAndNoHTMLSinks(t *testing.T) {
	t.Parallel()
	embedded := map[string]bool{}
	for _, name := range files(t) {
		embedded[name] = true
	}
	for _, name := range files(t) {
		data, err := fs.ReadFile(Files(), name)
		require.NoError(t, err)
		text := strings.ReplaceAll(string(data), svgNS, "")
		require.Empty(t, anyURL.FindAllString(text, -1), "%s names another host", name)
		if path.Ext(name) != ".js" {
			continue
		}
		require.Empty(t, htmlSinks.FindAllString(text, -1), "%s parses text as HTML or code", name)
		for _, m := range importRE.FindAllStringSubmatch(text, -1) {
			require.True(t, strings.HasPrefix(m[1], "./") || strings.HasPrefix(m[1], "../"), "%s imports %s: relative paths only", name, m[1])
			target := path.Join(path.Dir(name), m[1])
			require.True(t, embedded[target], "%s imports %s, which is not embedded (%s)", name, m[1], target)
		}
	}
}
