package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
)

// TestScrapeStats counts writes sent through an instrumented config, then
// reads them back as the benchmark reads an operator: from the registry in
// process and from a metrics endpoint in the text format.
func TestScrapeStats(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer api.Close()
	w := newWriteCounter()
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total"}, []string{"controller", "result"})
	w.reg.MustRegister(reconciles)
	reconciles.WithLabelValues("website", "success").Add(3)
	reconciles.WithLabelValues("website", "error").Add(1)
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth"}, []string{"controller", "name"})
	active := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "controller_runtime_active_workers"}, []string{"controller"})
	w.reg.MustRegister(depth, active)
	depth.WithLabelValues("website", "website").Set(5)
	active.WithLabelValues("website").Set(2)
	cfg := &rest.Config{Host: api.URL}
	w.instrument(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	for _, path := range []string{"/apis/apps/v1/namespaces/ns/deployments/a", "/apis/apps/v1/namespaces/ns/deployments/b", "/api/v1/namespaces/ns/services/a"} {
		req, _ := http.NewRequest(http.MethodPatch, api.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/apply-patch+yaml")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	metrics := httptest.NewServer(promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	defer metrics.Close()
	st, err := scrapeStats(context.Background(), metrics.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := counts{
		{Verb: "APPLY", Group: "apps", Resource: "deployments"}: 2,
		{Verb: "APPLY", Resource: "services"}:                   1,
	}
	if diff := cmp.Diff(want, st.Writes); diff != "" {
		t.Errorf("scraped writes (-want +got):\n%s", diff)
	}
	if st.Reconciles != 4 {
		t.Errorf("scraped reconciles = %d, want 4", st.Reconciles)
	}
	if st.Backlog != 7 {
		t.Errorf("scraped backlog = %d, want 7 (5 queued, 2 in progress)", st.Backlog)
	}
	if st.LastWrite.Before(before.Add(-time.Millisecond)) || st.LastWrite.After(time.Now()) {
		t.Errorf("scraped last write %v, want after %v", st.LastWrite, before)
	}
	inProcess, last := w.snapshot()
	if diff := cmp.Diff(want, inProcess); diff != "" {
		t.Errorf("writes in process (-want +got):\n%s", diff)
	}
	if d := last.Sub(st.LastWrite); d > time.Microsecond || d < -time.Microsecond {
		t.Errorf("last write in process %v, scraped %v", last, st.LastWrite)
	}
}

func TestParseRequestTotal(t *testing.T) {
	raw := []byte(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="example.inrun.dev",resource="websites",scope="resource",subresource="status",verb="APPLY",version="v1"} 1.5e+03
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 4
apiserver_request_duration_seconds_count{verb="APPLY"} 9
`)
	got, err := parseRequestTotal(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := counts{
		{Verb: "APPLY", Group: "apps", Resource: "deployments"}:                                  9,
		{Verb: "APPLY", Group: "example.inrun.dev", Resource: "websites", Subresource: "status"}: 1500,
		{Verb: "LIST", Resource: "pods"}:                                                         4,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if n := got.sum(objectWrite); n != 1509 {
		t.Errorf("object writes = %d, want 1509 (LIST is no write)", n)
	}
}

func TestParseLabelsEscapes(t *testing.T) {
	got, err := parseLabels(`a="x,y",b="q\"uote",c=""`)
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != "x,y" || got["b"] != `q"uote` || got["c"] != "" {
		t.Errorf("parseLabels = %q", got)
	}
}
