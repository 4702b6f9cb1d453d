// Package sdk is the remote reconciler contract of Inrun, version
// inrun.dev/reconciler/v1alpha1, in Go: the Request the runtime sends, the
// Result a reconciler answers, the strict readers of both, and Handler,
// which turns a Go function into a reconciler served over HTTP.
//
// It is the one home of these types. The runtime's HTTP client
// (runtime-lib/remote) reads replies with DecodeResult, and a reconciler
// written in Go reads requests with DecodeRequest through Handler, so the
// two sides cannot drift apart. docs/reconciler-contract.md describes the
// wire format for reconcilers in other languages.
//
// Its promises:
//   - Reading is strict. An unknown field, a value of the wrong type, a
//     missing or unsupported apiVersion or kind, a resource without
//     apiVersion, kind or metadata.name, a bad duration or an event type
//     other than Normal or Warning is an error, never a guess.
//   - Every problem is reported at once, as an ErrorList of FieldErrors,
//     each with the JSON path of the value (resources[2].metadata.name),
//     what is wrong with it, and what would be valid. A document of
//     another apiVersion reports only that: its fields may mean something
//     else there.
//   - A request or Result that passes Validate is one the other side
//     accepts: Handler validates what a Go reconciler returns before it
//     sends it.
//
// The package needs nothing but the standard library, so that a reconciler
// importing it stays small.
package sdk
