// Package registry shares Blueprints as OCI artifacts: patterns.
//
// A pattern is one OCI image manifest (artifactType MediaTypePattern) per
// version. Its layers are the Blueprint, the files it names (a CRD,
// manifests, Blueprints it uses), its tests (test/) and its README, one
// layer per file, each titled with its path (org.opencontainers.image.title)
// as oras does, so plain oras or crane read and copy a pattern. Its
// annotations name it, its version, its description and the Inrun that
// pushed it.
//
// A pattern's proof is a second manifest (artifactType MediaTypeProof)
// whose subject is the pattern manifest: an OCI 1.1 referrer. Its one layer
// is a DSSE envelope, signed with an ed25519 key the publisher holds,
// around an in-toto Statement whose subject is the pattern manifest's
// digest and whose predicate records the simulate and e2e results the
// pattern passed (PredicateType). Because the pattern manifest names every
// layer by digest, the proof covers every byte of the Blueprint and of the
// tests that ran.
//
//	pattern manifest  ◀── subject ── proof manifest
//	├─ blueprint.yaml                 └─ DSSE(in-toto Statement{
//	├─ manifests/crd.yaml                  subject: pattern digest,
//	├─ test/simulate.yaml                  predicate: Results})
//	├─ test/e2e.yaml
//	└─ README.md
//
// Push refuses a pattern without a passing result, pushes every blob and
// both manifests by digest, and tags the version only at the end, so that
// nothing partially pushed is found by its version. Pull resolves a
// reference to a digest, reads the pattern, finds its proofs (through the
// referrers API, or the tag schema where the registry lacks it, checking
// that every referrer's subject is the digest asked for) and verifies
// them: the signature by a trusted key, the subject digest, and a passing
// result. An index artifact beside the patterns lists them and their
// versions, for registries whose _catalog is off.
//
// A Blueprint's lifecycle.deprecation travels on the pattern manifest
// (AnnotationDeprecation) and in the index (deprecation.go). An OCI image
// layout can stand in for a registry (Layout): inrun run caches what it
// resolves there, by digest, and reads it back when a registry does not
// answer, verifying it again.
//
// The package takes a pattern as files and results as data; it does not
// run tests itself (package registry/gate does), and it never compiles a
// Blueprint.
package registry
