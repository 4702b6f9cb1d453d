// Package console is the intent gateway's web console: one page, embedded
// in the binary (plain HTML, CSS and JavaScript, no build step), that reads
// and writes through the gateway's JSON API only. It asks for a token,
// lists the targets the token may use with their fields, shows the
// caller's intents with their live views (the watch endpoint), state and
// problems, generates an intent form from a target's fields, shows the
// field problems the API answers next to the fields, deletes, and plays a
// draft intent through the gateway's stages (package play's endpoint).
//
// The page holds no secret: the token is kept in the tab's sessionStorage
// and sent as an Authorization header, never in a URL. Every answer carries
// a strict Content-Security-Policy: scripts, styles and requests from the
// gateway's own origin only, nothing inline, no frames.
package console

import (
	"embed"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every file of the console.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// Handler serves the console's files under prefix (such as
// gateway.ConsolePath): prefix itself is the page.
func Handler(prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the console is read with GET", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		ct, known := contentTypes[path.Ext(name)]
		data, err := static.ReadFile("static/" + name)
		if !known || strings.Contains(name, "/") || err != nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", ct)
		_, _ = w.Write(data)
	})
}
