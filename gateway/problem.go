package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Problem is an error answer, as an application/problem+json body (RFC
// 9457) with two members of Inrun's own: fix, what to do about it, and
// fields, the intent fields at fault.
type Problem struct {
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Title is the status's short name, such as "Forbidden".
	Title string `json:"title"`
	// Code names the class of problem, stable across versions, such as
	// "out-of-scope": what clients switch on.
	Code string `json:"code"`
	// Detail says what is wrong with this request.
	Detail string `json:"detail"`
	// Fix says what to do.
	Fix string `json:"fix,omitempty"`
	// Fields are the intent fields at fault, each with its own problem.
	Fields []FieldProblem `json:"fields,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
	// Location, with a 3xx Status, is where the request goes instead: sent
	// as the Location header, and kept in the body so that a replayed
	// answer sends it again.
	Location string `json:"location,omitempty"`
}

// FieldProblem is what is wrong with one intent field.
type FieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p *Problem) Error() string { return p.Detail }

// The codes of problems.
const (
	CodeUnauthenticated   = "unauthenticated"
	CodeTokenExpired      = "token-expired"
	CodeTokenRevoked      = "token-revoked"
	CodeOutOfScope        = "out-of-scope"
	CodeUnknownTarget     = "unknown-target"
	CodeNotFound          = "not-found"
	CodeMethod            = "method-not-allowed"
	CodeMalformed         = "malformed-json"
	CodeInvalid           = "invalid-intent"
	CodeTooLarge          = "too-large"
	CodeMediaType         = "unsupported-media-type"
	CodeRateLimited       = "rate-limited"
	CodeExists            = "exists"
	CodeNotOurs           = "not-made-by-the-gateway"
	CodeIdempotencyKey    = "idempotency-key"
	CodeInFlight          = "in-flight"
	CodeKeyReused         = "idempotency-key-reused"
	CodeUnavailable       = "unavailable"
	CodeAmbiguous         = "ambiguous"
	CodeBadQuery          = "bad-query"
	CodeInternal          = "internal"
	CodeRefusedByCluster  = "refused"
	CodeIntentImmutable   = "immutable-field"
	CodeDeletingInProcess = "deleting"
	CodeIntentMoved       = "intent-moved"
)

func problem(status int, code, fix, format string, args ...any) *Problem {
	return &Problem{Status: status, Title: http.StatusText(status), Code: code, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

// Write sends p as the answer.
func (p *Problem) Write(w http.ResponseWriter) {
	if p.RetryAfter > 0 {
		secs := int((p.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if p.Location != "" {
		w.Header().Set("Location", p.Location)
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="inrun"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeJSON sends v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
