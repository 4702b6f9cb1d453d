// Command bench measures how fast Website custom resources of the canonical
// pack converge on a real local control plane, and what it costs in API
// writes, reconciles and memory. It runs, one after another on one Full
// local control plane, each in a namespace of its own:
//
//   - limit: a raw client loop with 16 workers that makes exactly the
//     server-side apply writes a Website needs and nothing else;
//   - handwritten: a controller-runtime operator written by hand
//     (package handwritten);
//   - interpreted: Inrun's runtime (runner.Run) with the pack's Blueprint;
//   - compiled: the operator inrun build generates from the same Blueprint,
//     built before the control plane starts (or given by -compiled-binary).
//
// For each it creates N Websites, waits until all report Ready, waits until
// the operator has written nothing and had no work queued for 5 seconds,
// counts the writes made during a quiet window after that, then edits every
// Website once and measures the same again. Writes are counted by the API
// server (apiserver_request_total) and, as a cross-check, by the operator's
// own client, through runtime-lib's write metrics on its metrics endpoint.
// Operators run as processes of their own (the hidden "operator" subcommand
// of this command, or the compiled binary), so that their CPU time and peak
// RSS are theirs alone.
//
// With -paired, each Inrun kind runs instead at the same time as a
// hand-written operator of its own, each confined to its namespace, so
// that their ratios are measured under the same conditions.
//
// Usage, from the repository root:
//
//	go run ./bench [-n N] [-json out.json] [-only limit,handwritten,interpreted,compiled] [-quiet 60s] [-cpuprofile prefix] [-paired]
//
// docs/performance.md explains each figure. The micro-benchmarks in this
// directory run with go test -bench.
package main
