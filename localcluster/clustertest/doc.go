// Package clustertest runs Go tests against a local control plane from
// package localcluster.
//
// The usual shape is one Full cluster per test package, started by the
// first test that needs it and stopped after the last, with a namespace per
// test for isolation:
//
//	func TestMain(m *testing.M) {
//		clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
//	}
//
//	func TestSomething(t *testing.T) {
//		c := clustertest.Shared(t)
//		ns := clustertest.NewNamespace(t, c)
//		...
//	}
//
// A test that needs a cluster of its own, such as one it will break, calls
// Start instead; t.Cleanup stops that cluster.
//
// Tests find the binaries the way the inrun CLI does: $INRUN_ASSETS_DIR,
// else the per-version cache directory that "make assets" fills. When they
// are missing, a test is skipped with a message that says how to build
// them, unless INRUN_REQUIRE_ASSETS=1, as in CI, where it fails instead.
package clustertest
