// Package shard spreads the custom resources of a Blueprint over several
// replicas of the runtime, so that more than one replica reconciles at once
// and none reconciles a custom resource another one is reconciling.
//
// A custom resource belongs to one of a fixed number of buckets (Buckets,
// default 256): a bucket is a range of the 64-bit FNV-1a hash of the custom
// resource's UID, the hash the API server computes for a sharded list and
// watch (KEP-5866, shardRange(object.metadata.uid, ...); a test checks Hash
// and Selector against k8s.io/apimachinery/pkg/sharding). Because buckets
// are hash ranges, where that feature is on a replica's buckets are the
// shard selector of its informers of custom resources (Selection
// SelectServer: Selector writes it, SelectingConfig sends it, and
// ServerSelects tells whether the API server honours it). Elsewhere
// buckets are labels: LabelBucket on a custom resource (written by the
// replicas, a function of its UID). Children carry LabelOwnerBucket (their
// custom resource's bucket) either way, and each replica caches only the
// objects of the buckets it wants (Wanted), with the selector In writes. A
// selector cannot change, so Epochs rebuilds the caches, and the
// controllers on them, when the wanted buckets change.
//
// Membership is a Lease per replica (Group-ID, labelled with the Group),
// renewed every RenewPeriod. A replica claims nothing in its first period,
// so that replicas started together see each other before any claims a
// bucket. A Lease is live while another replica has seen
// it change within its LeaseDuration, by that replica's clock, as client-go's
// leader election judges a Lease, so clocks need not agree. Buckets go to
// live members by rendezvous hashing (Assign): a member joining or leaving
// moves about 1/n of the buckets and no others.
//
// The drain handshake keeps a bucket reconciled by at most one replica.
// Each Lease lists, in its annotation shard.inrun.dev/held, the buckets its
// replica holds. A replica that loses a bucket stops admitting reconciles
// of it at once, waits for those in flight to end, and only then drops it
// from its Lease. A replica that gains a bucket first adds it to its Lease,
// then reads every Lease again from the API server, and starts reconciling
// it only if no other live Lease holds it (a replica that sees a conflict
// gives the bucket up and tries again next period): of two replicas that
// claim a bucket at once, the later writer sees the earlier one. An expired
// Lease holds nothing. A replica that cannot renew its Lease within two
// thirds of LeaseDuration stops admitting reconciles until it can.
//
// Member is a manager.Runnable that does all this; Admit is the gate a
// reconcile passes (Gate wraps a reconcile.Reconciler with it), Owns filters
// events, Changed reports gained buckets so that their custom resources
// are queued again, and Wanted the buckets to cache. Quiesce turns new
// reconciles away and waits for those in flight, before Epochs stops an
// epoch. Controllers that cannot pass Admit call by call (controller-runtime
// reconcilers of their own) run under Epochs.ActiveOnly: each epoch caches
// the buckets Active lists and pins them (PinActive), so that none is
// released before the epoch that reconciled it has stopped.
package shard
