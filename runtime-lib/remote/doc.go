// Package remote calls remote reconcilers: HTTP services, in any language,
// that take the runtime's sdk.Request for one custom resource and answer an
// sdk.Result (the contract is in package sdk and docs/reconciler-contract.md).
//
// The runtime depends on the Caller interface. Client is its HTTP
// implementation: New(Options) addresses a reconciler by URL or by an
// in-cluster Service, with a per-request timeout, a bearer token (fixed or
// read before every request), and a CA bundle for TLS. Go calls a
// reconciler compiled into the binary (reconcile.go, registered in package
// components), reading its Result as strictly as an HTTP reply and
// containing its panics, errors and timeouts.
//
// Its promises:
//   - A reply is read strictly with sdk.DecodeResult. A reply that is not a
//     valid ReconcileResult is an error listing every problem; nothing of it
//     is returned, so the runtime never applies, or prunes after, half a
//     Result.
//   - Connection errors, timeouts, 429 and 5xx are retried with exponential
//     backoff and jitter, honouring Retry-After (seconds or an HTTP date),
//     within Options.MaxAttempts and Options.MaxElapsed. Other statuses,
//     bad replies and refused certificates are not: another attempt would
//     meet the same answer.
//   - Every failure is an *Error whose Kind (Unreachable, Closed, Timeout,
//     HTTPStatus, BadReply, Truncated, Credentials) the runtime can
//     report, and whose message names the reconciler's URL, what it
//     answered, and what to do.
//   - Nothing changed, nothing sent: per custom resource, the sha256 of the
//     canonical JSON of the last successful request is kept, and an equal
//     request gets the last Result back (Result.Cached) without an HTTP
//     request, unless that Result asked for a requeue. Finalizing requests
//     are always sent. A reconciler whose answer depends on anything outside
//     the request says so with requeueAfter.
package remote
