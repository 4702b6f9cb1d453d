package controller

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsOptions are the manager's metrics server on addr ("0" turns it
// off). With secure, it serves HTTPS (a self-signed certificate unless
// certDir holds tls.crt and tls.key) and answers only a bearer token the
// API server authenticates (TokenReview) and authorizes to get /metrics
// (SubjectAccessReview), as kubebuilder's operators do: the process's own
// identity must be allowed to create both reviews, and a scraper needs a
// role with the nonResourceURL /metrics. HTTP/2 is off, as in kubebuilder's
// scaffold, against its stream-reset attacks.
func MetricsOptions(addr string, secure bool, certDir string) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: addr}
	if secure {
		opts.SecureServing = true
		opts.CertDir = certDir
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return opts
}
