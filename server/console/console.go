// Package console is seatd's web console: plain HTML, CSS and JavaScript
// modules embedded in the binary (no build step, nothing fetched from
// elsewhere) and served under /ui/. The pages talk to seatd only through
// the REST API, with the key the admin signs in with as the bearer header:
// the console has no routes, state or authentication of its own.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is where the console is served.
const Prefix = "/ui/"

// ContentSecurityPolicy is sent with every console file: scripts, styles,
// images and API calls from seatd itself only; no inline script or style
// attribute, no framing, and DOM sinks such as innerHTML refused outright
// (Trusted Types with no policy), since the pages build their DOM with
// textContent.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

//go:embed static
var embedded embed.FS

// Files are the console's files, rooted at what /ui/ serves.
func Files() fs.FS {
	files, err := fs.Sub(embedded, "static")
	if err != nil {
		panic(err) // "static" is embedded above: cannot happen
	}
	return files
}

// Handler serves the console at Prefix: index.html for Prefix itself and
// each embedded file by its path (Prefix+"index.html" redirects to
// Prefix); anything else, a directory listing included, is 404.
func Handler() http.Handler {
	files := Files()
	etags := map[string]string{}
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		etags["/"+path] = `"` + hex.EncodeToString(sum[:12]) + `"`
		return nil
	})
	serve := http.FileServerFS(files)
	return http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path
		if name == "/" {
			name = "/index.html"
		}
		etag, ok := etags[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		// Revalidate each time (cheap: the ETag answers 304), so a new
		// seatd never runs with an old console's modules.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", etag)
		serve.ServeHTTP(w, r)
	}))
}
