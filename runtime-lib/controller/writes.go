package controller

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the write metrics, as served on the manager's metrics endpoint.
const (
	WritesMetric    = "inrun_client_writes_total"
	LastWriteMetric = "inrun_client_last_write_timestamp_seconds"
)

// WriteMetrics count the writes an operator's clients send, by verb and
// resource. client-go's own rest_client_requests_total knows only the HTTP
// method, so a controller that re-applies one kind in a loop shows there as
// a rise in PATCH and nothing more; these say which kind and subresource.
type WriteMetrics struct {
	writes    *prometheus.CounterVec
	lastWrite prometheus.Gauge
}

// NewWriteMetrics returns write metrics registered nowhere yet.
func NewWriteMetrics() *WriteMetrics {
	return &WriteMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: WritesMetric,
			Help: "Write requests sent to the API server, by verb (APPLY for server-side apply), group, resource and subresource.",
		}, []string{"verb", "group", "resource", "subresource"}),
		lastWrite: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: LastWriteMetric,
			Help: "When the last write request was sent, in seconds since the Unix epoch.",
		}),
	}
}

// Collectors are what to register to serve the metrics.
func (m *WriteMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.lastWrite}
}

// Instrument makes every client built from cfg count its writes in m.
func (m *WriteMetrics) Instrument(cfg *rest.Config) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return countingTransport{m: m, next: next}
	})
}

// defaultWrites are served with controller-runtime's metrics.
var defaultWrites = NewWriteMetrics()

func init() {
	ctrlmetrics.Registry.MustRegister(defaultWrites.Collectors()...)
}

// CountWrites makes every client built from cfg count its writes in the
// metrics the manager serves, inrun_client_writes_total and
// inrun_client_last_write_timestamp_seconds.
func CountWrites(cfg *rest.Config) { defaultWrites.Instrument(cfg) }

type countingTransport struct {
	m    *WriteMetrics
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if verb := WriteVerb(r); verb != "" {
		group, resource, subresource := resourceOfPath(r.URL.Path)
		t.m.writes.WithLabelValues(verb, group, resource, subresource).Inc()
		t.m.lastWrite.Set(float64(time.Now().UnixNano()) / 1e9)
	}
	return t.next.RoundTrip(r)
}

// WriteVerb names a write request as the API server's
// apiserver_request_total does, APPLY for server-side apply, or returns ""
// for a read.
func WriteVerb(r *http.Request) string {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		return r.Method
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	}
	return ""
}

// resourceOfPath reads the group, resource and subresource of an API path
// such as /apis/apps/v1/namespaces/ns/deployments/name/status. A path
// outside the resource API is its own resource.
func resourceOfPath(path string) (group, resource, subresource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group = parts[1]
		parts = parts[3:]
	default:
		return "", path, ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 2 {
		subresource = parts[2]
	}
	return group, resource, subresource
}
