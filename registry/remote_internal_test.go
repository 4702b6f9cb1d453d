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
