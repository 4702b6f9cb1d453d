package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/inrun/inrun/sdk"
)

// Caller asks a reconciler for the Result of one request. The HTTP Client
// implements it, API (an existing HTTP API mapped by reconcile.api) and Go
// (a reconciler compiled into the binary) too: the runtime depends on this
// interface, not on how the Result is obtained.
type Caller interface {
	Call(ctx context.Context, req *sdk.Request) (*Result, error)
}

// Result is a reconciler's Result and how it was obtained.
type Result struct {
	sdk.Result
	// Cached is true when the request was the same as the last successful
	// one for this custom resource, so no HTTP request was made and the
	// last Result is returned again.
	Cached bool
	// Attempts counts the HTTP requests made; 0 when Cached.
	Attempts int
}

// Client calls one remote reconciler over HTTP. It is safe for concurrent
// use by the workers of a controller.
type Client struct {
	opts Options
	url  string
	http *http.Client
	memo memo
}

var _ Caller = &Client{}

// New returns a Client for the reconciler opts address.
func New(opts Options) (*Client, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	return &Client{
		opts: opts,
		url:  opts.endpoint(),
		http: opts.httpClient(),
	}, nil
}

// URL returns the address requests are POSTed to.
func (c *Client) URL() string { return c.url }

// Call sends req and returns the reconciler's Result, retrying connection
// errors, timeouts, 429 and 5xx with backoff. A request whose canonical
// JSON is the same as that of the last successful call for the same custom
// resource, when that call's Result asked for no requeue, is not sent: the
// last Result is returned with Cached set. A finalizing request is always
// sent. The Result is the caller's to change.
//
// A failure is an *Error. When ctx ends first, the error wraps ctx.Err()
// instead: the reconciler is not to blame.
func (c *Client) Call(ctx context.Context, req *sdk.Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("remote: the runtime built an invalid request: %w", err)
	}
	body, err := canonical(req)
	if err != nil {
		return nil, fmt.Errorf("remote: encoding the request: %w", err)
	}
	key := c.memo.key(req, body, c.opts.DisableCache)
	if cached := c.memo.get(key); cached != nil {
		return cached, nil
	}
	res, attempts, err := c.send(ctx, body, req.Finalizing)
	c.memo.put(key, res, err)
	if err != nil {
		return nil, err
	}
	return &Result{Result: *res, Attempts: attempts}, nil
}

// Forget drops what the Client remembers of the custom resource ref, e.g.
// once it is gone, so that the cache holds only live custom resources.
func (c *Client) Forget(ref sdk.ObjectRef) { c.memo.forget(ref) }

// canonical encodes req the same way whenever it means the same: object
// keys sorted (encoding/json sorts map keys) and observed children sorted by
// id and identity, whatever order the runtime listed them in.
func canonical(req *sdk.Request) ([]byte, error) {
	r := *req
	r.Observed = append([]sdk.Resource(nil), req.Observed...)
	sort.SliceStable(r.Observed, func(i, j int) bool {
		a, b := r.Observed[i], r.Observed[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Ref().String() < b.Ref().String()
	})
	return json.Marshal(r)
}

// send makes up to MaxAttempts requests, waiting between them.
func (c *Client) send(ctx context.Context, body []byte, finalizing bool) (*sdk.Result, int, error) {
	start := c.opts.Clock.Now()
	for attempt := 1; ; attempt++ {
		res, err := c.attempt(ctx, body, finalizing)
		if err == nil {
			return res, attempt, nil
		}
		if ctx.Err() != nil {
			return nil, attempt, fmt.Errorf("calling reconciler at %s: %w", c.url, ctx.Err())
		}
		err.Attempts = attempt
		if !err.retryable || attempt >= c.opts.MaxAttempts {
			return nil, attempt, err
		}
		wait := err.RetryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if c.opts.Clock.Now().Add(wait).Sub(start) > c.opts.MaxElapsed {
			// Not worth holding a worker: the runtime requeues.
			return nil, attempt, err
		}
		if serr := c.opts.Clock.Sleep(ctx, wait); serr != nil {
			return nil, attempt, fmt.Errorf("calling reconciler at %s: %w", c.url, serr)
		}
	}
}

// backoff is the jittered wait after the given failed attempt: between
// half and all of Backoff doubled attempt-1 times, at most MaxBackoff.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.Backoff
	for i := 1; i < attempt && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// attempt makes one HTTP request.
func (c *Client) attempt(ctx context.Context, body []byte, finalizing bool) (*sdk.Result, *Error) {
	fail := func(kind Kind, err error, retryable bool) *Error {
		return &Error{Kind: kind, URL: c.url, Err: err, retryable: retryable}
	}
	token := c.opts.Token
	if c.opts.TokenSource != nil {
		t, err := c.opts.TokenSource(ctx)
		if err != nil {
			return nil, fail(Credentials, err, false)
		}
		token = t
	}

	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fail(Unreachable, err, false)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "inrun")
	if token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	// Marks the request idempotent, as the contract makes it, without
	// sending the header: net/http then sends it again on a new
	// connection when the server closed the kept-alive one it went out
	// on (restarted, or timed it out), instead of failing with EOF.
	hreq.Header["Idempotency-Key"] = nil

	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.transportError(actx, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxReplyBytes+1))
	if errors.Is(err, io.ErrUnexpectedEOF) && actx.Err() == nil {
		// The connection closed in the middle of the body.
		cut := fmt.Errorf("the connection closed after %d bytes of the body", len(reply))
		if resp.ContentLength > 0 {
			cut = fmt.Errorf("the connection closed after %d of the %d bytes its Content-Length announced", len(reply), resp.ContentLength)
		}
		return nil, &Error{Kind: Truncated, URL: c.url, Status: resp.StatusCode, Err: cut, retryable: true}
	}
	if err != nil {
		return nil, c.transportError(actx, err)
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := fail(HTTPStatus, fmt.Errorf("HTTP %d", resp.StatusCode), false)
		e.Status, e.Body = resp.StatusCode, excerpt(reply)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests,
			resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented && resp.StatusCode != http.StatusHTTPVersionNotSupported:
			e.retryable = true
			e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), c.opts.Clock.Now())
		}
		return nil, e
	}
	if int64(len(reply)) > c.opts.MaxReplyBytes {
		return nil, fail(BadReply, fmt.Errorf("the reply is larger than %d bytes", c.opts.MaxReplyBytes), false)
	}
	res, err := sdk.DecodeResult(reply, finalizing)
	if err != nil {
		e := fail(BadReply, err, false)
		e.Body = excerpt(reply)
		return nil, e
	}
	return res, nil
}

// transportError classifies a failure to get a reply.
func (c *Client) transportError(actx context.Context, err error) *Error {
	var netErr net.Error
	if errors.Is(actx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return &Error{Kind: Timeout, URL: c.url, retryable: true,
			Err: fmt.Errorf("no reply within %s", c.opts.Timeout)}
	}
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		// Another attempt meets the same certificate.
		return &Error{Kind: Unreachable, URL: c.url, Err: unwrapURL(err)}
	}
	if hungUp(err) {
		return &Error{Kind: Closed, URL: c.url, Err: unwrapURL(err), retryable: true}
	}
	return &Error{Kind: Unreachable, URL: c.url, Err: unwrapURL(err), retryable: true}
}

// hungUp reports whether err is a server closing (or resetting) the
// connection before any reply: it was reachable, and "unreachable: EOF"
// would send people to check the network.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// unwrapURL drops net/http's `Post "URL": ` prefix, since Error names the
// URL itself.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
