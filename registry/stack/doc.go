// Package stack reads Stacks and resolves them against pattern registries.
//
// A Stack is a file naming the patterns a team runs: for each, the
// registry namespace it comes from, a semver constraint on its version,
// and the deprecations the team accepts, each until a date. Read reads one
// with positions and reports every problem at once (internal/diag).
// Resolve picks, for each entry, the newest version in the registry's
// index that meets its constraint, fetches it by digest and verifies its
// proof (package registry), and refuses a deprecated version that the
// Stack does not accept, or whose acceptance (or the publisher's after
// date) has lapsed, naming the replacement. Recheck judges a version that
// already runs again against the index as it is now, never refusing it:
// a runtime learns so of a deprecation pushed while it runs.
//
// The index is only a list: what runs is what the digest names and the
// proof covers. A version's own deprecation is read from its manifest; a
// deprecation another version scopes over it (lifecycle.deprecation.
// versions) is read from the index.
//
// The format is documented in docs/registry.md.
package stack
