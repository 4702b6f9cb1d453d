// Package runner is the interpreted runtime: it loads Blueprints (from files
// or from ConfigMaps in the cluster), installs their CRDs when asked, and
// runs one controller per Blueprint in a controller-runtime manager with
// metrics, health probes, leader election (or, with Options.Shard, the custom
// resources shared among replicas: package shard) and graceful shutdown.
package runner
