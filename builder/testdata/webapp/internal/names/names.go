// Package names is internal to the module: the builder cannot import it,
// and the packages that register do.
package names

// Reconciler is the name the reconciler registers under.
const Reconciler = "webapp"
