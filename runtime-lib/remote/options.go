package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/inrun/inrun/ir"
)

// Options configure a Client. Exactly one of URL and Service is required;
// everything else has a default.
type Options struct {
	// URL is the absolute http:// or https:// URL requests are POSTed to.
	URL string
	// Service is an in-cluster Service serving the reconciler, used instead
	// of URL.
	Service *ServiceRef

	// Timeout bounds one HTTP request, from sending it to reading the whole
	// reply. Default DefaultTimeout.
	Timeout time.Duration

	// Token is sent as "Authorization: Bearer <Token>".
	Token string
	// TokenSource returns the bearer token before every request, so that a
	// token read from a Secret can rotate. At most one of Token and
	// TokenSource.
	TokenSource func(ctx context.Context) (string, error)
	// CABundle holds the PEM certificates an https reconciler's certificate
	// must chain to. Empty: the system's roots.
	CABundle []byte

	// MaxAttempts bounds the HTTP requests one Call makes. Default 3; 1
	// turns retries off.
	MaxAttempts int
	// MaxElapsed is how long after a Call starts another attempt may still
	// begin: a wait that would end later is not made, and the Call returns
	// the last error with its RetryAfter. Default 30s.
	MaxElapsed time.Duration
	// Backoff is the wait after the first failed attempt. It doubles with
	// each attempt, up to MaxBackoff, and each wait is jittered by up to
	// half of it. Defaults 200ms and 5s. A Retry-After header replaces it.
	Backoff    time.Duration
	MaxBackoff time.Duration

	// DisableCache makes every Call reach the reconciler, even when its
	// request is the same as last time.
	DisableCache bool
	// MaxReplyBytes bounds the reply read. Default 16 MiB.
	MaxReplyBytes int64

	// Clock is the time source of the waits between attempts. Default: the
	// wall clock. Tests give a clock that records waits instead of making
	// them.
	Clock Clock
}

// DefaultTimeout bounds one HTTP request when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// ServiceRef names an in-cluster Service. It resolves to
// scheme://name.namespace.svc:port/path.
type ServiceRef struct {
	Namespace string
	Name      string
	// Port defaults to 443 for https and 80 for http.
	Port int32
	// Path defaults to "/".
	Path string
	// Scheme is "http" or "https". Default: https when Options.CABundle is
	// set, http otherwise.
	Scheme string
}

// OptionsFor returns the Options the reconcile section of a Blueprint
// configures: URL or Service, and Timeout. The caller adds the token and
// CA bundle, which live in the cluster rather than in the Blueprint.
func OptionsFor(r *ir.Remote) Options {
	o := Options{URL: r.URL, Timeout: r.Timeout}
	if r.Service != nil {
		o.Service = &ServiceRef{Namespace: r.Service.Namespace, Name: r.Service.Name, Port: r.Service.Port, Path: r.Service.Path}
	}
	return o
}

// Clock is the time a Client waits by.
type Clock interface {
	Now() time.Time
	// Sleep returns after d, or with ctx's error when ctx is done first.
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setDefaults fills in the defaults and checks what cannot be defaulted,
// reporting every problem at once.
func (o *Options) setDefaults() error {
	var errs []error
	switch {
	case o.URL != "" && o.Service != nil:
		errs = append(errs, errors.New("set URL or Service, not both"))
	case o.URL == "" && o.Service == nil:
		errs = append(errs, errors.New("set URL or Service: where is the reconciler?"))
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("URL %q is not an absolute http:// or https:// URL", o.URL))
		}
	default:
		s := o.Service
		if s.Name == "" || s.Namespace == "" {
			errs = append(errs, errors.New("Service needs a name and a namespace"))
		}
		if s.Scheme != "" && s.Scheme != "http" && s.Scheme != "https" {
			errs = append(errs, fmt.Errorf("Service scheme %q is not http or https", s.Scheme))
		}
		if s.Port < 0 || s.Port > 65535 {
			errs = append(errs, fmt.Errorf("Service port %d is not from 1 to 65535", s.Port))
		}
	}
	if o.Token != "" && o.TokenSource != nil {
		errs = append(errs, errors.New("set Token or TokenSource, not both"))
	}
	if len(o.CABundle) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(o.CABundle) {
			errs = append(errs, errors.New("CABundle holds no PEM certificate"))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", o.Timeout}, {"MaxElapsed", o.MaxElapsed}, {"Backoff", o.Backoff}, {"MaxBackoff", o.MaxBackoff}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.name, d.v))
		}
	}
	if o.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("MaxAttempts %d is negative", o.MaxAttempts))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remote: %w", err)
	}

	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.MaxElapsed == 0 {
		o.MaxElapsed = 30 * time.Second
	}
	if o.Backoff == 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.MaxReplyBytes == 0 {
		o.MaxReplyBytes = 16 << 20
	}
	if o.Clock == nil {
		o.Clock = wallClock{}
	}
	return nil
}

// endpoint returns the URL requests go to.
func (o *Options) endpoint() string {
	if o.Service == nil {
		return o.URL
	}
	s := o.Service
	scheme := s.Scheme
	if scheme == "" {
		scheme = "http"
		if len(o.CABundle) > 0 {
			scheme = "https"
		}
	}
	port := s.Port
	if port == 0 {
		port = 80
		if scheme == "https" {
			port = 443
		}
	}
	path := s.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	host := s.Name + "." + s.Namespace + ".svc:" + strconv.Itoa(int(port))
	return (&url.URL{Scheme: scheme, Host: host, Path: path}).String()
}

// httpClient returns the client requests are made with: the CA bundle as
// its only roots when one is given, and no redirects, since a redirected
// POST may arrive as a GET.
func (o *Options) httpClient() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(o.CABundle) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(o.CABundle)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
