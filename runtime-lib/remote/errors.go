package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind classifies why a call failed, so that the runtime can say so in a
// condition and decide how soon to try again.
type Kind string

const (
	// Unreachable: no HTTP reply at all, e.g. connection refused, DNS, a
	// TLS certificate that is not trusted.
	Unreachable Kind = "Unreachable"
	// Timeout: no complete reply within Options.Timeout.
	Timeout Kind = "Timeout"
	// HTTPStatus: the reconciler answered with a status other than 2xx.
	HTTPStatus Kind = "HTTPStatus"
	// BadReply: a 2xx reply that is not a valid ReconcileResult.
	BadReply Kind = "BadReply"
	// Credentials: Options.TokenSource failed, so no request was sent.
	Credentials Kind = "Credentials"
	// Truncated: a reply cut short, its connection closed before the end
	// of its body.
	Truncated Kind = "Truncated"
	// Closed: the connection was accepted, then closed (or reset) before
	// any reply: the server is there, but crashed or dropped the request.
	Closed Kind = "Closed"
	// Request: the request to an API mapped by reconcile.api could not be
	// built (an expression failed), so none was sent.
	Request Kind = "Request"
	// Refused: the API answered with a status its mapping says is a
	// failure (reconcile.api.statuses, or any 4xx once statuses or id are
	// set).
	Refused Kind = "Refused"
)

// Error is a failed Call. Its message says what happened and, where the
// fix is outside Inrun, what to do.
type Error struct {
	Kind Kind
	// URL is the reconciler's address.
	URL string
	// Status is the HTTP status of an HTTPStatus error.
	Status int
	// Body is the start of the reply of an HTTPStatus or BadReply error:
	// at most 200 bytes, on one line.
	Body string
	// Attempts is how many HTTP requests were made.
	Attempts int
	// RetryAfter is how long the last reply asked the runtime to wait (a
	// 429 or 5xx with Retry-After); zero when it did not say. The runtime's
	// next reconcile of the custom resource comes no sooner, up to its
	// backoff cap.
	RetryAfter time.Duration
	// Err is the underlying error: a net error, or the sdk.ErrorList of a
	// BadReply.
	Err error
	// API is set for an API mapped by reconcile.api, which messages name
	// as an API rather than a reconciler.
	API bool
	// KeepStatus are status fields the runtime writes although the call
	// failed: the id an API assigned before a later step of the call
	// failed, so that the next call updates the record instead of
	// creating another.
	KeepStatus map[string]any

	// retryable marks failures another attempt may cure.
	retryable bool
}

func (e *Error) Error() string {
	var b strings.Builder
	who := "reconciler"
	if e.API {
		who = "API"
	}
	switch e.Kind {
	case Unreachable:
		fmt.Fprintf(&b, "%s at %s is unreachable%s: %v", who, e.URL, e.after(), e.Err)
		b.WriteString(tlsHint(e.Err))
	case Closed:
		fmt.Fprintf(&b, "%s at %s closed the connection without answering%s", who, e.URL, e.after())
		if !errors.Is(e.Err, io.EOF) {
			fmt.Fprintf(&b, ": %v", e.Err)
		}
		fmt.Fprintf(&b, " (did it crash or give up while handling the request? its log may say)")
	case Timeout:
		fmt.Fprintf(&b, "%s at %s did not answer in time%s: %v (make it answer faster, or raise reconcile.timeout)", who, e.URL, e.after(), e.Err)
	case Request:
		fmt.Fprintf(&b, "the request to the API could not be built, so none was sent: %v", e.Err)
	case Refused:
		fmt.Fprintf(&b, "API at %s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
		if e.Body != "" {
			b.WriteString(": " + e.Body)
		}
		if e.Err != nil {
			fmt.Fprintf(&b, " (%v)", e.Err)
		}
	case HTTPStatus:
		fmt.Fprintf(&b, "%s at %s answered %d %s%s", who, e.URL, e.Status, http.StatusText(e.Status), e.after())
		if e.Body != "" {
			b.WriteString(": " + e.Body)
		}
		switch e.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			b.WriteString(" (check the bearer token the runtime sends)")
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			if !e.API {
				b.WriteString(" (check the reconciler's URL or Service path; requests are POSTed)")
			}
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			b.WriteString(" (redirects are not followed: use the address it redirects to)")
		}
		if e.RetryAfter > 0 {
			fmt.Fprintf(&b, " (it asks to be called again in %s)", e.RetryAfter)
		}
	case BadReply:
		if e.API {
			fmt.Fprintf(&b, "reply of API at %s", e.URL)
			if e.Status != 0 {
				fmt.Fprintf(&b, " (%d %s)", e.Status, http.StatusText(e.Status))
			}
			fmt.Fprintf(&b, " does not map to a valid Result: %v", e.Err)
			if e.Status >= 300 {
				b.WriteString("; say what this status means in reconcile.api.statuses")
			}
			break
		}
		fmt.Fprintf(&b, "reply of reconciler at %s is not a valid ReconcileResult: %v", e.URL, e.Err)
	case Truncated:
		fmt.Fprintf(&b, "reply of %s at %s was cut short%s: %v", who, e.URL, e.after(), e.Err)
	case Credentials:
		fmt.Fprintf(&b, "no bearer token for reconciler at %s: %v", e.URL, e.Err)
	default:
		fmt.Fprintf(&b, "reconciler at %s: %v", e.URL, e.Err)
	}
	return b.String()
}

func (e *Error) after() string {
	if e.Attempts > 1 {
		return fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return ""
}

func (e *Error) Unwrap() error { return e.Err }

// tlsHint says what to do about a certificate the runtime refused.
func tlsHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA):
		return " (its certificate is not signed by a CA the runtime trusts: give the reconciler's CA bundle)"
	case errors.As(err, &hostname):
		return " (its certificate is not issued for this host name: issue it for the host in the reconciler's URL)"
	case errors.As(err, &verify):
		return " (its certificate was refused: check it and the reconciler's CA bundle)"
	}
	return ""
}

// maxBody bounds Error.Body.
const maxBody = 200

// excerpt returns the start of body on one line, cut at a rune boundary,
// without control characters: it reaches conditions, Events and
// terminals, where an escape sequence would be acted on.
func excerpt(body []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(string(body), "�"))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxBody {
		return s
	}
	cut := maxBody
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
