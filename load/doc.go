// Package load is the first stage of the pipeline: it turns where a
// Blueprint is kept into a Source the compiler reads.
//
//	load (File, FS, ConfigMap, ...) ─▶ Source ─▶ compiler ─▶ ir.Blueprint
//
// A Source is the Blueprint's text, the name diagnostics give it, and the
// files it may name (crd.file, uses:), read through the small Files
// interface; Source.Open reads another Blueprint it uses, from its own
// directory (or, for ConfigMaps, its own ConfigMap).
// Loading never parses YAML or CEL: it only finds bytes, so a new place to
// keep Blueprints (an OCI pattern, say) is a new function here and nothing
// downstream changes.
package load
