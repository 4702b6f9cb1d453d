package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	orasregistry "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Target is one repository patterns are kept in: a registry's, or an
// OCI layout's. Predecessors (or the referrers API, when the Target has
// it) finds a pattern's proofs.
type Target interface {
	oras.Target
	content.PredecessorFinder
}

// Registry opens repositories by name (team/website).
type Registry interface {
	Repository(ctx context.Context, name string) (Target, error)
}

// Reference names a pattern: a registry, a repository in it, and a tag or
// a digest.
type Reference struct {
	// Registry is the host[:port].
	Registry string
	// Repository is the path in the registry; its last element is the
	// pattern's name.
	Repository string
	// Reference is a tag (the version) or a digest; empty in a reference
	// to a repository.
	Reference string
}

// ParseReference reads host[:port]/path/name[:version|@digest]. A version
// after @ (name@1.2.0), as inrun run takes it, is read as :1.2.0: only a
// digest has a colon after the @.
func ParseReference(s string) (Reference, error) {
	if i := strings.LastIndex(s, "@"); i > 0 && !strings.Contains(s[i+1:], ":") {
		s = s[:i] + ":" + s[i+1:]
	}
	r, err := orasregistry.ParseReference(s)
	if err != nil {
		return Reference{}, fmt.Errorf("%q is not a pattern reference: %w; write REGISTRY/[NAMESPACE/]NAME[:VERSION], such as localhost:5000/patterns/website:1.0.0", s, err)
	}
	return Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Reference}, nil
}

// Name is the pattern's name: the repository's last element.
func (r Reference) Name() string { return path.Base(r.Repository) }

// Namespace is the repository's path without the name: where the index is.
func (r Reference) Namespace() string {
	if dir := path.Dir(r.Repository); dir != "." {
		return dir
	}
	return ""
}

func (r Reference) String() string {
	s := r.Registry + "/" + r.Repository
	switch {
	case r.Reference == "":
	case strings.Contains(r.Reference, ":"):
		s += "@" + r.Reference
	default:
		s += ":" + r.Reference
	}
	return s
}

// Remote is a registry reached over HTTP(S), with the credentials docker
// login and oras login keep.
type Remote struct {
	// Host is the registry's host[:port].
	Host string
	// PlainHTTP talks HTTP instead of HTTPS. Loopback hosts default to it
	// (see NewRemote).
	PlainHTTP bool
	// Client makes the requests. Nil: an auth client with the docker
	// credentials store and retries.
	Client remote.Client
}

// NewRemote returns a Remote for host, over plain HTTP when host is a
// loopback address (a local registry) and HTTPS otherwise.
func NewRemote(host string) *Remote {
	return &Remote{Host: host, PlainHTTP: IsLoopback(host)}
}

// IsLoopback reports whether host[:port] names this machine.
func IsLoopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Repository opens a repository of the registry.
func (r *Remote) Repository(_ context.Context, name string) (Target, error) {
	repo, err := remote.NewRepository(r.Host + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("repository %s/%s: %w", r.Host, name, err)
	}
	repo.PlainHTTP = r.PlainHTTP
	repo.Client = r.Client
	if repo.Client == nil {
		client := &auth.Client{Client: httpClient, Cache: auth.NewCache()}
		// Without a credentials store (no home, say) anonymous access
		// still works.
		if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
			client.Credential = credentials.Credential(store)
		}
		repo.Client = client
	}
	return repo, nil
}

// httpClient is oras' retrying client over a transport that gives up on a
// registry that takes the connection but never answers: without it every
// command waited for ever, and inrun run never fell back to its cache. A
// blob may take long to send; only connecting and the wait for an
// answer's headers are bounded.
var httpClient = newHTTPClient(30 * time.Second)

func newHTTPClient(answerWithin time.Duration) *http.Client {
	return &http.Client{Transport: retry.NewTransport(&http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: answerWithin,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	})}
}

// pingTimeout bounds Reachable's one request.
var pingTimeout = 15 * time.Second

// Reachable checks that the registry answers, so that a wrong host or a
// stopped registry is one clear error before any work is done.
func (r *Remote) Reachable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	reg, err := remote.NewRegistry(r.Host)
	if err != nil {
		return err
	}
	reg.PlainHTTP = r.PlainHTTP
	reg.Client = &auth.Client{Client: httpClient, Cache: auth.NewCache()}
	if r.Client != nil {
		reg.Client = r.Client
	}
	if err := reg.Ping(ctx); err != nil {
		hint := "check the host and port, and that the registry runs"
		if !r.PlainHTTP {
			hint += "; a registry without TLS needs --plain-http"
		}
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			hint = "the registry did not answer in time; " + hint
		}
		return fmt.Errorf("registry %s is unreachable: %w; %s", r.Host, err, hint)
	}
	return nil
}
