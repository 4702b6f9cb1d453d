package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Epochs runs, one at a time, the manager Build makes for the buckets its
// Member wants (Member.Wanted): a manager whose caches hold only those
// buckets' custom resources and children. controller-runtime cannot
// change a cache's label selector, so when the wanted buckets change the
// running manager is stopped (new reconciles are turned away, and those
// in flight may end first, for up to DrainTimeout: Member.Quiesce) and a
// new one is built and started: an epoch. The Member runs beside the
// epochs, not in them: the Leases, and the handshake that keeps a bucket
// reconciled by one replica, do not depend on which epoch reconciles.
//
// Replicas join one by one and the Leases settle over a few periods, so a
// new epoch starts only once the wanted buckets have stayed the same for
// Settle (or have differed from the running epoch's for 4×Settle, however
// often they change). The first epoch waits likewise.
type Epochs struct {
	// Member is this replica's membership. Required.
	Member *Member
	// Build makes the manager of an epoch whose caches hold buckets.
	// Required.
	Build func(buckets []int) (manager.Manager, error)
	// Stopped, when set, is called after an epoch's manager has stopped.
	Stopped func(manager.Manager)
	// Settle is how long the wanted buckets must stay the same before an
	// epoch starts. Default twice the Member's RenewPeriod.
	Settle time.Duration
	// ActiveOnly caches the buckets the Member reconciles now
	// (Member.Active) rather than those it wants, and pins them
	// (Member.PinActive) until the epoch has stopped. It is for
	// controllers that cannot pass Member.Admit call by call, such as the
	// controller-runtime reconcilers of reconcile.go: what their caches
	// hold is what they may reconcile, and a bucket moves to another
	// replica only once the epoch that reconciled it has stopped. The
	// price is a colder handover: the new replica lists a bucket's
	// objects only once it has it.
	ActiveOnly bool
}

var _ manager.LeaderElectionRunnable = &Epochs{}

// NeedLeaderElection is false: every replica runs its epochs.
func (e *Epochs) NeedLeaderElection() bool { return false }

// Start runs epochs until ctx is done or one fails.
func (e *Epochs) Start(ctx context.Context) error {
	if e.Member == nil || e.Build == nil {
		return errors.New("shard: Epochs needs a Member and a Build")
	}
	if e.Settle <= 0 {
		e.Settle = 2 * e.Member.opts.RenewPeriod
	}
	var (
		current []int
		stop    context.CancelFunc
		done    chan error
		mgr     manager.Manager
		unpin   = func() {}
	)
	stopped := func() {
		if e.Stopped != nil {
			e.Stopped(mgr)
		}
		unpin()
	}
	end := func() error {
		if stop == nil {
			return nil
		}
		stop()
		err := <-done
		stopped()
		stop = nil
		return err
	}
	defer func() { _ = end() }()
	for {
		next, err := e.next(ctx, current, stop != nil, done)
		var ended *epochEnded
		if errors.As(err, &ended) {
			stop = nil // its done has been read
			stopped()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err != nil {
			return end()
		}
		resume := func() {}
		if stop != nil && !e.ActiveOnly {
			// Let the reconciles in flight end rather than cancel them
			// (an ActiveOnly epoch's controllers do not pass Admit).
			drain, cancel := context.WithTimeout(ctx, DrainTimeout)
			resume = e.Member.Quiesce(drain)
			cancel()
		}
		if err := end(); err != nil {
			resume()
			return fmt.Errorf("stopping the caches of buckets %s: %w", formatList(current), err)
		}
		if e.ActiveOnly {
			// What is pinned is what is active now, which may have
			// changed since next settled: if so, the next epoch follows.
			next, _, unpin = e.Member.PinActive()
		}
		e.Member.log.Info("caching the custom resources and children of buckets", "buckets", len(next))
		if mgr, err = e.Build(next); err != nil {
			unpin()
			resume()
			return err
		}
		current = next
		var epoch context.Context
		epoch, stop = context.WithCancel(ctx)
		done = make(chan error, 1)
		go func(mgr manager.Manager) { done <- mgr.Start(epoch) }(mgr)
		// The new epoch's controllers may be admitted as soon as they run.
		resume()
	}
}

// DrainTimeout bounds how long Epochs waits, before it stops an epoch, for
// the reconciles in flight to end; those still running then are cancelled.
const DrainTimeout = 10 * time.Second

// next waits until the wanted buckets differ from current (or no epoch is
// running) and have settled, and returns them. It returns an error when
// ctx is done or the running epoch stops by itself.
func (e *Epochs) next(ctx context.Context, current []int, running bool, done <-chan error) ([]int, error) {
	var candidate []int
	var since, diverged time.Time
	tick := time.NewTicker(e.Settle / 4)
	defer tick.Stop()
	changedOf, bucketsOf := e.Member.WantedChanged, e.Member.Wanted
	if e.ActiveOnly {
		changedOf, bucketsOf = e.Member.ActiveChanged, e.Member.activeKnown
	}
	for {
		changed := changedOf()
		wanted, known := bucketsOf()
		now := time.Now()
		if known && (!running || !slices.Equal(wanted, current)) {
			if diverged.IsZero() {
				diverged = now
			}
			if candidate == nil || !slices.Equal(wanted, candidate) {
				candidate, since = wanted, now
			}
			if now.Sub(since) >= e.Settle || now.Sub(diverged) >= 4*e.Settle {
				return candidate, nil
			}
		} else {
			candidate, diverged = nil, time.Time{}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-done:
			return nil, &epochEnded{buckets: current, err: err}
		case <-changed:
		case <-tick.C:
		}
	}
}

// epochEnded is a running epoch's manager stopping by itself.
type epochEnded struct {
	buckets []int
	err     error
}

func (e *epochEnded) Error() string {
	if e.err == nil {
		return fmt.Sprintf("the caches of buckets %s stopped", formatList(e.buckets))
	}
	return fmt.Sprintf("the caches of buckets %s: %v", formatList(e.buckets), e.err)
}

func (e *epochEnded) Unwrap() error { return e.err }

// formatList writes buckets as the Lease annotation does.
func formatList(buckets []int) string {
	n := 0
	for _, b := range buckets {
		n = max(n, b+1)
	}
	set := make([]bool, n)
	for _, b := range buckets {
		set[b] = true
	}
	if s := formatBuckets(set); s != "" {
		return s
	}
	return "(none)"
}
