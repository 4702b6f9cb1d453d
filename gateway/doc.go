// Package gateway is the intent gateway, inrun serve: callers send intents,
// small JSON objects in their own words with no apiVersion, kind or spec,
// and read back views of what those intents became.
//
// A Blueprint's serve section (ir.Serve) says what a target takes and
// returns. A request goes through the stages in order, each a small piece
// with its own type, joined only by data:
//
//	authenticate  Authenticator: the bearer token becomes a Caller (tokens are
//	              Secrets holding only a hash; see Tokens)
//	limit         a token bucket per token: 429 with Retry-After
//	authorize     the Caller's scopes against the target's grants: 403 says why
//	validate      Target.Validate: strict JSON (duplicate keys, unknown fields,
//	              wrong types refused with the field named), then required,
//	              enum and pattern: an Intent
//	map           Target.Map: the Intent becomes the custom resource
//	apply         server-side apply under the gateway's own field manager, once
//	              per Idempotency-Key (Records)
//	wait          optionally, until the custom resource settles or a timeout
//	view          Target.View: serve.view over the custom resource, its state,
//	              and its problems in terms of intent fields, never spec paths
//
// What it promises:
//
//   - The gateway only changes custom resources it made: those labelled
//     LabelTarget. Anything else of the kind is left alone, and a request
//     that would change it is refused (409).
//   - Every error is an application/problem+json body (RFC 9457) whose
//     detail says what is wrong and whose fix says what to do; field
//     problems name intent fields.
//   - Tokens never appear in logs or responses after they are made; a
//     revoked or expired token is refused on its next request, since the
//     token's Secret is read on every request.
//   - An Idempotency-Key (IETF draft-ietf-httpapi-idempotency-key-header)
//     makes a POST, PUT or DELETE happen once: the same key and payload
//     returns the first answer, another payload is 422, a retry while the
//     first is in flight is 409. The record of a key is a Lease in the
//     gateway's namespace, so it holds across restarts and replicas.
//   - Every change, and every refused attempt at one, is an audit line
//     (who, what, when, outcome), and every change an Event on the custom
//     resource.
//
// Server serves the JSON API under /v1 (see docs/gateway.md) and an
// OpenAPI 3 document of it at /v1/openapi.json. Its mux is open to more
// handlers (Server.Handle), which Server.Authenticate lets share the API's
// authenticate and limit stages: inrun serve mounts the web console
// (package console) at ConsolePath and the play endpoint (package play)
// there; GET / sends a browser to the console when one is mounted.
package gateway
