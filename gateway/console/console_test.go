package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/inrun/inrun/gateway/console"
)

// TestAssets: each embedded file is served under the prefix with its own
// content type, and every answer carries the strict policy.
func TestAssets(t *testing.T) {
	srv := httptest.NewServer(console.Handler("/console/"))
	defer srv.Close()
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/console/", "text/html; charset=utf-8", `<script src="console.js" defer></script>`},
		{"/console/index.html", "text/html; charset=utf-8", `<label for="token">`},
		{"/console/console.js", "text/javascript; charset=utf-8", "sessionStorage"},
		{"/console/console.css", "text/css; charset=utf-8", ":focus-visible"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, body := get(t, srv.URL+tc.path)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != tc.ctype || !strings.Contains(body, tc.contains) {
				t.Errorf("%d %q, body containing %q: %v", res.StatusCode, res.Header.Get("Content-Type"), tc.contains, strings.Contains(body, tc.contains))
			}
			checkHeaders(t, res)
		})
	}
	for _, path := range []string{"/console/nope.js", "/console/static/console.js", "/console/../console.go", "/console/console.go", "/other"} {
		res, _ := get(t, srv.URL+path)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.StatusCode)
		}
		checkHeaders(t, res)
	}
	res, err := http.Post(srv.URL+"/console/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// checkHeaders: the policy allows the page's own origin only, and nothing
// inline or framed.
func checkHeaders(t *testing.T, res *http.Response) {
	t.Helper()
	csp := res.Header.Get("Content-Security-Policy")
	directives := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			directives[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for name, want := range map[string]string{
		"default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'",
		"frame-ancestors": "'none'", "base-uri": "'none'", "form-action": "'none'",
	} {
		if directives[name] != want {
			t.Errorf("Content-Security-Policy %s is %q, want %q (policy %q)", name, directives[name], want, csp)
		}
	}
	for _, weak := range []string{"unsafe-inline", "unsafe-eval", "*", "data:", "http:"} {
		if strings.Contains(csp, weak) {
			t.Errorf("Content-Security-Policy allows %s: %q", weak, csp)
		}
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", res.Header)
	}
}

// TestSelfContained: the files need nothing the policy forbids (no inline
// script or style, no handler attributes) and nothing from elsewhere (no
// CDN, no web font); the token is kept for the tab only.
func TestSelfContained(t *testing.T) {
	dir := os.DirFS("static")
	files, err := fs.Glob(dir, "*")
	if err != nil || len(files) != 3 {
		t.Fatalf("static holds %v (%v); want index.html, console.css, console.js", files, err)
	}
	inline := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=`)
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|@font-face|url\(`)
	for _, f := range files {
		b, err := fs.ReadFile(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.HasSuffix(f, ".html") {
			if m := inline.FindString(s); m != "" {
				t.Errorf("%s has inline script, style or a handler: %q", f, m)
			}
			if !strings.Contains(s, `<html lang="en">`) {
				t.Errorf("%s does not say its language", f)
			}
		}
		if m := external.FindString(s); m != "" {
			t.Errorf("%s reaches outside the gateway: %q", f, m)
		}
	}
	js, _ := fs.ReadFile(dir, "console.js")
	for _, bad := range []string{"localStorage", "innerHTML", "eval(", "console.log", "?token", "&token"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
}
