package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// silent is a registry that takes every connection and never answers.
func silent(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestSilentRegistryIsUnreachable: a registry that never answers is one
// error saying so, not a command that waits for ever: the ping, and any
// request after it, give up.
func TestSilentRegistryIsUnreachable(t *testing.T) {
	host := silent(t)
	defer func(d time.Duration) { pingTimeout = d }(pingTimeout)
	pingTimeout = 300 * time.Millisecond
	r := &Remote{Host: host, PlainHTTP: true}
	err := r.Reachable(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("Reachable = %v; want the registry named as not answering in time", err)
	}

	r.Client = &auth.Client{Client: newHTTPClient(300 * time.Millisecond), Cache: auth.NewCache()}
	repo, err := r.Repository(context.Background(), "team/website")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := repo.Resolve(context.Background(), "1.0.0"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Errorf("Resolve = %v; want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Resolve against a registry that never answers is still waiting")
	}
}

// TestParseReference: a version is read after : and, as inrun run takes
// it, after @; a digest only after @.
func TestParseReference(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]Reference{
		"localhost:5000/team/website:1.2.0": {Registry: "localhost:5000", Repository: "team/website", Reference: "1.2.0"},
		"localhost:5000/team/website@1.2.0": {Registry: "localhost:5000", Repository: "team/website", Reference: "1.2.0"},
		"localhost:5000/team/website@" + d:  {Registry: "localhost:5000", Repository: "team/website", Reference: d},
		"registry.example/website":          {Registry: "registry.example", Repository: "website"},
	} {
		got, err := ParseReference(in)
		if err != nil || got != want {
			t.Errorf("ParseReference(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := ParseReference("localhost:5000/team/website@sha256:nothex"); err == nil {
		t.Error("a bad digest was accepted")
	}
}
