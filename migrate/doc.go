// Package migrate moves the values stored in custom resources when their
// CRD changes under live data: inrun migrate plan and apply, and inrun
// rollback.
//
// A Migration comes from a compiled Blueprint (FromBlueprint): each served
// field with a migrate section is a Move of the values at its old paths to
// its path. The package reads nothing else of the Blueprint, and reaches the
// cluster only through a controller-runtime client.Client.
//
// It promises:
//
//   - Plan writes nothing. It counts what Apply would do, shows sample
//     diffs, and flags every lossy move (a value that would be dropped).
//     Apply refuses to start while the plan has a lossy move its field does
//     not acknowledge (migrate.acceptLoss), and then writes nothing.
//   - Before an object changes, its full prior state is saved in the
//     cluster (Secrets, chunked under the object size limit), and the
//     snapshot's SHA-256 is written to the migration's ledger (ConfigMaps).
//     The object is then updated at the resourceVersion the snapshot was
//     taken from, with a marker annotation (AnnotationID) naming the
//     migration, so the snapshot is exactly the state the move replaced.
//     Objects move in batches: a batch's snapshots, then its ledger entries
//     (one write per ledger shard), then its objects.
//   - Apply resumes: killed at any point and run again, it skips marked
//     objects and redoes the others from a fresh read. No object is moved
//     twice.
//   - Rollback first verifies every snapshot against the ledger, and
//     refuses, naming each object and snapshot, when one is missing or
//     tampered with; it then writes nothing. It restores a field only where
//     the live value is still the one the migration wrote. A field edited
//     since is never overwritten: it is reported as Drift (the value before
//     the migration, the value it wrote, the live value) and skipped,
//     unless the object is named in RollbackOptions.Force.
//   - Clean first verifies every object of the kind: none holds a value at
//     an old path, and each carrying the marker has its ledger entry.
//     Otherwise it refuses, naming each object, and writes nothing. Then
//     it removes the old paths from the installed CRD (only one Inrun
//     installed), has the objects stored in the storage version and drops
//     the others from the CRD's status.storedVersions (a
//     StorageVersionMigration, or rewriting the objects where no controller
//     runs one), and deletes the snapshots and the ledger.
//
// A kind move (KindFromBlueprint: the Blueprint's migrate section) moves
// the custom resources its selection picks to another kind. For each, in
// this order, every step idempotent: its snapshot and ledger entry, the
// marker on it, the new custom resource (and a snapshot of it as created),
// its status, its children re-parented (owner references and Inrun's
// inventory labels rewritten by UID, so that garbage collection deletes
// nothing and the runtimes recreate nothing), and last the old one
// deleted without Inrun's finalizer, at the resourceVersion it was read
// at, so that its runtime finalizes nothing away. RollbackKind creates the
// old ones again from their snapshots, hands the children back, and
// deletes the new ones; a value edited on a new one since is drift, kept
// unless forced.
//
// The transitional CRD, which serves the old and the new paths while values
// move, is the compiler's (compiler/transitional.go): it is generated from
// the Blueprint's schema section like the rest of the CRD.
//
// KindMove.Clean ends a kind move: it verifies that no custom resource of
// the old kind is a move begun and not finished, rolled back, or selected
// and not moved, refusing otherwise and writing nothing; then it deletes
// the snapshots and the ledger, and the old kind's CRD only when Inrun
// alone wrote it and no custom resource of the kind, nor a child of one
// waiting for garbage collection, is left.
package migrate
