package controller

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
)

func TestResourceOfPath(t *testing.T) {
	for _, tc := range []struct {
		path                         string
		group, resource, subresource string
	}{
		{"/api/v1/namespaces/ns/services/web", "", "services", ""},
		{"/api/v1/namespaces/ns/services", "", "services", ""},
		{"/api/v1/namespaces/ns", "", "namespaces", ""},
		{"/apis/apps/v1/namespaces/ns/deployments/web", "apps", "deployments", ""},
		{"/apis/example.inrun.dev/v1/namespaces/ns/websites/web/status", "example.inrun.dev", "websites", "status"},
		{"/apis/events.k8s.io/v1/namespaces/ns/events", "events.k8s.io", "events", ""},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "authorization.k8s.io", "selfsubjectaccessreviews", ""},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "rbac.authorization.k8s.io", "clusterroles", ""},
		{"/version", "", "/version", ""},
	} {
		g, r, s := resourceOfPath(tc.path)
		if g != tc.group || r != tc.resource || s != tc.subresource {
			t.Errorf("resourceOfPath(%q) = %q, %q, %q; want %q, %q, %q", tc.path, g, r, s, tc.group, tc.resource, tc.subresource)
		}
	}
}

// TestWriteMetricsCount sends requests through an instrumented config to a
// loopback server and reads the metrics back.
func TestWriteMetricsCount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	m := NewWriteMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	cfg := &rest.Config{Host: srv.URL}
	m.Instrument(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path, contentType string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	before := time.Now()
	send(http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/web", "application/apply-patch+yaml")
	send(http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/web", "application/apply-patch+yaml")
	send(http.MethodPatch, "/apis/example.inrun.dev/v1/namespaces/ns/websites/web/status", "application/merge-patch+json")
	send(http.MethodPost, "/apis/events.k8s.io/v1/namespaces/ns/events", "application/json")
	send(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments/web", "")

	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"APPLY", "apps", "deployments", ""}, 2},
		{[]string{"PATCH", "example.inrun.dev", "websites", "status"}, 1},
		{[]string{"POST", "events.k8s.io", "events", ""}, 1},
	} {
		if got := testutil.ToFloat64(m.writes.WithLabelValues(tc.labels...)); got != tc.want {
			t.Errorf("%s%v = %v, want %v", WritesMetric, tc.labels, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.writes); n != 3 {
		t.Errorf("%s has %d series, want 3: a GET is no write", WritesMetric, n)
	}
	last := testutil.ToFloat64(m.lastWrite)
	if at := time.Unix(0, int64(last*1e9)); at.Before(before.Add(-time.Millisecond)) || at.After(time.Now()) {
		t.Errorf("%s = %v, want between %v and now", LastWriteMetric, at, before)
	}
}
