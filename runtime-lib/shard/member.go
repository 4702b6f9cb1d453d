package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const (
	// LabelGroup marks the Leases of one group of replicas.
	LabelGroup = "shard.inrun.dev/group"
	// AnnotationHeld lists the buckets a replica holds (see package doc).
	AnnotationHeld = "shard.inrun.dev/held"
	// AnnotationInstance tells apart two processes given the same ID: the
	// second waits until the first one's Lease expires.
	AnnotationInstance = "shard.inrun.dev/instance"
)

// Options configure a Member.
type Options struct {
	// Group names the replicas that share custom resources: the runtimes
	// of the same Blueprints. Required.
	Group string
	// ID names this replica in its group. Default: the host name (a Pod's
	// name in a cluster).
	ID string
	// Namespace holds the Leases. Default: the Pod's namespace in a
	// cluster, else "default".
	Namespace string
	// Buckets is how many buckets custom resources are spread over; every
	// replica of a group must agree. Default DefaultBuckets.
	Buckets int
	// LeaseDuration is how long a replica's buckets stay its own after
	// its last renewal. Default 15s.
	LeaseDuration time.Duration
	// RenewPeriod is how often the Lease is renewed and membership read.
	// Default 2s.
	RenewPeriod time.Duration
	// ReleaseOnCancel deletes the Lease when the Member stops, after its
	// reconciles in flight end, so that the others take its buckets at
	// once rather than after LeaseDuration.
	ReleaseOnCancel bool
	// Selection is how this replica's caches select the custom resources
	// of its buckets. Default SelectAuto.
	Selection Selection
	// Log reports membership changes.
	Log logr.Logger
}

func (o *Options) setDefaults() error {
	if o.Group == "" {
		return errors.New("shard: Options.Group is required")
	}
	if o.ID == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("shard: no ID and no host name: %w", err)
		}
		o.ID = host
	}
	if o.Namespace == "" {
		o.Namespace = "default"
		if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
			o.Namespace = strings.TrimSpace(string(ns))
		}
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultBuckets
	}
	var err error
	if o.Selection, err = ParseSelection(string(o.Selection)); err != nil {
		return fmt.Errorf("shard: Options.Selection: %w", err)
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewPeriod <= 0 {
		o.RenewPeriod = 2 * time.Second
	}
	if o.RenewPeriod >= o.LeaseDuration/2 {
		return fmt.Errorf("shard: RenewPeriod %s must be under half of LeaseDuration %s", o.RenewPeriod, o.LeaseDuration)
	}
	return nil
}

// Member is one replica of a group: it keeps its Lease, works out its
// buckets, and admits reconciles of only those (see the package doc).
type Member struct {
	c        client.Client
	opts     Options
	name     string // of its Lease
	instance string // random, of this process
	log      logr.Logger

	mu       sync.Mutex
	active   []bool // buckets it admits reconciles of
	held     []bool // buckets its Lease lists
	inflight []int
	// pinned counts, per bucket, the epochs running on it that reconcile
	// without Admit (PinActive): like a reconcile in flight, a pin keeps a
	// lost bucket held.
	pinned  []int
	changed chan struct{}
	// activeChanged is closed the next time the active buckets change.
	activeChanged chan struct{}
	// quiesced, while above zero, has Admit turn every reconcile away
	// (Quiesce).
	quiesced int
	// admitted counts the reconciles admitted and not yet released, in
	// every bucket; quiet, when a Quiesce waits for them, is closed once it
	// falls to zero.
	admitted int
	quiet    chan struct{}
	// desired are the buckets Assign gives it by the last Leases read;
	// known is set once they have been read.
	desired []bool
	known   bool
	// wanted is closed the next time Wanted changes from lastWanted.
	wanted     chan struct{}
	lastWanted []int
	renewed    time.Time // last successful write of its Lease
	// joined is set after the first step: a replica first only makes its
	// Lease known, so that replicas started together see each other before
	// any claims a bucket, rather than the first taking them all.
	joined bool

	// drained wakes the loop when a lost bucket's last reconcile ends.
	drained chan struct{}
	// seen is when each other Lease was last seen to change, by this
	// replica's clock.
	seen map[string]observation
	// leaderSeen is the leader-election Lease's live holder last logged.
	leaderSeen string
}

type observation struct {
	resourceVersion string
	at              time.Time
}

var _ manager.LeaderElectionRunnable = &Member{}

// New returns a Member that reads and writes Leases with c, which should
// read from the API server rather than a cache: the handshake relies on
// reading what was written before.
func New(c client.Client, opts Options) (*Member, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	return &Member{
		c:             c,
		opts:          opts,
		name:          leaseName(opts.Group, opts.ID),
		instance:      string(uuid.NewUUID()),
		log:           opts.Log.WithValues("shard", opts.ID),
		active:        make([]bool, opts.Buckets),
		held:          make([]bool, opts.Buckets),
		inflight:      make([]int, opts.Buckets),
		pinned:        make([]int, opts.Buckets),
		changed:       make(chan struct{}),
		activeChanged: make(chan struct{}),
		desired:       make([]bool, opts.Buckets),
		wanted:        make(chan struct{}),
		drained:       make(chan struct{}, 1),
		seen:          map[string]observation{},
	}, nil
}

// leaseName is Group-ID, lower-cased and cut to a valid object name.
func leaseName(group, id string) string {
	n := strings.ToLower(group + "-" + id)
	if len(n) > 253 {
		n = n[:253]
	}
	return strings.TrimRight(n, "-.")
}

// ID is the replica's name in its group.
func (m *Member) ID() string { return m.opts.ID }

// Options are the Member's options, defaults filled in.
func (m *Member) Options() Options { return m.opts }

// NeedLeaderElection is false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// Admit says whether this replica may reconcile the custom resource with
// this UID now; when it may, release must be called once the reconcile
// has ended, and until then the bucket is not handed to another replica.
func (m *Member) Admit(uid types.UID) (release func(), ok bool) {
	b := Bucket(uid, m.opts.Buckets)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.active[b] || m.quiesced > 0 {
		return nil, false
	}
	m.inflight[b]++
	m.admitted++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.inflight[b]--
		m.admitted--
		if m.inflight[b] == 0 && m.pinned[b] == 0 && !m.active[b] {
			m.wake()
		}
		if m.admitted == 0 && m.quiet != nil {
			close(m.quiet)
			m.quiet = nil
		}
	}, true
}

// Quiesce has Admit turn every reconcile away until resume is called,
// and waits until those admitted before have ended, or ctx is done. Epochs
// quiesces before it stops an epoch, so that a rebuild of the caches does
// not cancel reconciles midway: the new epoch reconciles every custom
// resource once anyway, so those turned away meanwhile are not lost.
func (m *Member) Quiesce(ctx context.Context) (resume func()) {
	var once sync.Once
	resume = func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.quiesced--
		})
	}
	m.mu.Lock()
	m.quiesced++
	if m.admitted == 0 {
		m.mu.Unlock()
		return resume
	}
	if m.quiet == nil {
		m.quiet = make(chan struct{})
	}
	quiet := m.quiet
	m.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-quiet:
	}
	return resume
}

// PinActive lists the buckets this replica reconciles now and pins them
// until unpin is called: none of them is released to another replica
// before that, even once lost, as if a reconcile of each were in flight.
// known is false until the Leases have been read once. Epochs pins the
// buckets of each epoch when its controllers cannot pass Admit call by
// call (a controller-runtime reconciler of reconcile.go), so that a bucket
// moves only once the epoch that reconciled it has stopped.
func (m *Member) PinActive() (buckets []int, known bool, unpin func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	buckets, known = m.activeKnownLocked()
	for _, b := range buckets {
		m.pinned[b]++
	}
	var once sync.Once
	return buckets, known, func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, b := range buckets {
				m.pinned[b]--
			}
			m.wake()
		})
	}
}

// wake has the Lease loop run a step now, to release what drained.
func (m *Member) wake() {
	select {
	case m.drained <- struct{}{}:
	default:
	}
}

// Owns says whether the custom resource with this UID is in a bucket this
// replica reconciles now.
func (m *Member) Owns(uid types.UID) bool {
	b := Bucket(uid, m.opts.Buckets)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[b]
}

// Active lists the buckets this replica reconciles now.
func (m *Member) Active() []int {
	out, _ := m.activeKnown()
	return out
}

// activeKnown is Active, never nil, and whether the Leases have been read.
func (m *Member) activeKnown() ([]int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.activeKnownLocked()
}

func (m *Member) activeKnownLocked() ([]int, bool) {
	out := []int{}
	for b, a := range m.active {
		if a {
			out = append(out, b)
		}
	}
	return out, m.known
}

// ActiveChanged is closed the next time the buckets Active lists change,
// gained or lost.
func (m *Member) ActiveChanged() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.activeChanged
}

// activeChangedLocked reports a change of the active buckets.
func (m *Member) activeChangedLocked() {
	close(m.activeChanged)
	m.activeChanged = make(chan struct{})
}

// Wanted lists the buckets whose custom resources and children this
// replica should cache: those Assign gives it by the Leases it last read,
// and those its Lease still holds (draining, or claimed and not yet
// started). known is false until it has read the Leases once.
func (m *Member) Wanted() (buckets []int, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wantedLocked(), m.known
}

func (m *Member) wantedLocked() []int {
	out := []int{}
	for b := range m.desired {
		if m.desired[b] || m.held[b] {
			out = append(out, b)
		}
	}
	return out
}

// Wants says whether the custom resource with this UID is in a bucket
// Wanted lists.
func (m *Member) Wants(uid types.UID) bool {
	b := Bucket(uid, m.opts.Buckets)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.desired[b] || m.held[b]
}

// WantedChanged is closed the next time Wanted changes.
func (m *Member) WantedChanged() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wanted
}

// Changed is closed the next time this replica gains buckets.
func (m *Member) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Start keeps the Lease and the buckets until ctx is done; it then stops
// admitting reconciles, waits (up to LeaseDuration) for those in flight,
// and, with ReleaseOnCancel, deletes the Lease.
func (m *Member) Start(ctx context.Context) error {
	m.log.Info("joining the shard group", "group", m.opts.Group, "lease", m.opts.Namespace+"/"+m.name)
	t := time.NewTicker(m.opts.RenewPeriod)
	defer t.Stop()
	for {
		if err := m.step(ctx); err != nil && ctx.Err() == nil {
			m.log.Error(err, "keeping the shard Lease")
		}
		select {
		case <-ctx.Done():
			return m.leave()
		case <-t.C:
		case <-m.drained:
		}
	}
}

func (m *Member) leave() error {
	m.mu.Lock()
	m.deactivateLocked()
	m.mu.Unlock()
	deadline := time.Now().Add(m.opts.LeaseDuration)
	for time.Now().Before(deadline) {
		if m.idle() {
			break
		}
		select {
		case <-m.drained:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !m.opts.ReleaseOnCancel {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{}
	switch err := m.c.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.name}, lease); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("releasing the shard Lease: %w", err)
	case lease.Annotations[AnnotationInstance] != m.instance:
		// Another process's, given the same --shard-id: its buckets, not
		// this one's to release.
		m.log.Info("left the shard group; the shard Lease is another process's, and kept")
		return nil
	}
	rv := lease.ResourceVersion
	if err := m.c.Delete(ctx, lease, client.Preconditions{ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing the shard Lease: %w", err)
	}
	m.log.Info("left the shard group")
	return nil
}

func (m *Member) idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for b, n := range m.inflight {
		if n > 0 || m.pinned[b] > 0 {
			return false
		}
	}
	return true
}

// deactivateLocked stops admitting reconciles of every bucket.
func (m *Member) deactivateLocked() {
	changed := false
	for b, a := range m.active {
		if a {
			m.active[b], changed = false, true
		}
	}
	if changed {
		m.activeChangedLocked()
		// The gauge says so at once: a replica that cannot renew reconciles
		// nothing, however long the API server is away.
		m.observeBuckets()
	}
}

// view is what the Leases say: the live members and the buckets the
// others hold.
type view struct {
	own *coordinationv1.Lease
	// ownTaken is set while another process's live Lease has this
	// replica's ID.
	ownTaken bool
	// leader is the holder of the group's leader-election Lease while it
	// is live: a replica run without --shards, which reconciles every
	// custom resource (a Deployment rolling from one to the other).
	leader      string
	members     []string
	othersHold  []bool
	expiredLong []coordinationv1.Lease
}

func (m *Member) read(ctx context.Context) (*view, error) {
	list := &coordinationv1.LeaseList{}
	if err := m.c.List(ctx, list, client.InNamespace(m.opts.Namespace), client.MatchingLabels{LabelGroup: m.opts.Group}); err != nil {
		return nil, err
	}
	now := time.Now()
	v := &view{members: []string{m.opts.ID}, othersHold: make([]bool, m.opts.Buckets)}
	present := map[string]bool{}
	for i := range list.Items {
		l := &list.Items[i]
		if l.Name == m.name {
			v.own = l
			if inst := l.Annotations[AnnotationInstance]; inst == "" || inst == m.instance {
				continue
			}
		}
		present[l.Name] = true
		age, d := m.age(l, now)
		if age >= d {
			if age >= 2*d {
				v.expiredLong = append(v.expiredLong, *l)
			}
			continue // expired: holds nothing
		}
		if l.Name == m.name {
			v.ownTaken = true
			continue
		}
		if l.Spec.HolderIdentity != nil {
			v.members = append(v.members, *l.Spec.HolderIdentity)
		}
		parseBuckets(l.Annotations[AnnotationHeld], v.othersHold)
	}
	leader := &coordinationv1.Lease{}
	switch err := m.c.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.Group}, leader); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the leader-election Lease: %w", err)
	case leader.Spec.HolderIdentity != nil && *leader.Spec.HolderIdentity != "":
		// Released, client-go empties the holder; else it is live until
		// it goes unrenewed for its duration, by this process's clock.
		present[leader.Name] = true
		if age, d := m.age(leader, now); age < d {
			v.leader = *leader.Spec.HolderIdentity
		}
	}
	for name := range m.seen {
		if !present[name] {
			delete(m.seen, name)
		}
	}
	return v, nil
}

// age returns how long ago l was last renewed (its resourceVersion seen
// to change, by this process's clock) and its duration: it is live while
// age < d.
func (m *Member) age(l *coordinationv1.Lease, now time.Time) (age, d time.Duration) {
	o, ok := m.seen[l.Name]
	if !ok || o.resourceVersion != l.ResourceVersion {
		o = observation{resourceVersion: l.ResourceVersion, at: now}
		m.seen[l.Name] = o
	}
	d = m.opts.LeaseDuration
	if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		d = time.Duration(*s) * time.Second
	}
	return now.Sub(o.at), d
}

// step is one period: read the Leases, drop lost buckets that have
// drained, claim gained ones, renew, and start reconciling the claimed
// buckets no other live Lease holds.
func (m *Member) step(ctx context.Context) error {
	v, err := m.read(ctx)
	if err != nil {
		m.checkDeadline()
		return err
	}
	if v.ownTaken {
		// Another process has this ID (or this one's predecessor crashed):
		// its buckets are its own until its Lease expires.
		m.checkDeadline()
		return fmt.Errorf("the shard Lease %s/%s is another process's: waiting for it to expire (is --shard-id %q given to two replicas?)", m.opts.Namespace, m.name, m.opts.ID)
	}
	desired := make([]bool, m.opts.Buckets)
	if v.leader != m.leaderSeen {
		m.leaderSeen = v.leader
		if v.leader != "" {
			m.log.Info("a replica run without --shards holds the leader-election Lease, and reconciles every custom resource: claiming no bucket until it stops", "lease", m.opts.Namespace+"/"+m.opts.Group, "holder", v.leader)
		} else {
			m.log.Info("the leader-election Lease is no longer held: claiming buckets")
		}
	}
	if v.leader == "" {
		for _, b := range Assign(v.members, m.opts.Buckets)[m.opts.ID] {
			desired[b] = true
		}
	}
	m.mu.Lock()
	claimed, lost := 0, 0
	for b := range desired {
		if m.active[b] && !desired[b] {
			m.active[b] = false // no new reconciles of a lost bucket
			lost++
		}
		if m.held[b] && !desired[b] && !m.active[b] && m.inflight[b] == 0 && m.pinned[b] == 0 {
			m.held[b] = false // drained: another replica may take it
		}
		if m.joined && desired[b] && !m.held[b] && !v.othersHold[b] {
			m.held[b] = true
			claimed++
		}
	}
	if lost > 0 {
		m.activeChangedLocked()
	}
	held := formatBuckets(m.held)
	m.mu.Unlock()
	if lost > 0 {
		m.log.Info("buckets lost, draining", "count", lost, "members", len(v.members))
	}

	if err := m.renew(ctx, v.own, held); err != nil {
		m.checkDeadline()
		return err
	}
	m.joined = true
	// A bucket claimed in this step is started only after the Leases are
	// read again, after the claim was written: of two replicas claiming
	// it at once, the second to write sees the first.
	if claimed > 0 {
		if v, err = m.read(ctx); err != nil {
			return err
		}
	}
	m.mu.Lock()
	gained, backedOff := 0, 0
	for b := range desired {
		if !desired[b] || !m.held[b] || m.active[b] {
			continue
		}
		if v.othersHold[b] {
			m.held[b] = false // a conflict: give way, try again next period
			backedOff++
			continue
		}
		m.active[b] = true
		gained++
	}
	if gained > 0 {
		close(m.changed)
		m.changed = make(chan struct{})
	}
	if gained > 0 {
		m.activeChangedLocked()
	}
	copy(m.desired, desired)
	if w := m.wantedLocked(); !m.known || !slices.Equal(w, m.lastWanted) {
		m.known, m.lastWanted = true, w
		close(m.wanted)
		m.wanted = make(chan struct{})
	}
	m.observe(len(v.members))
	m.mu.Unlock()
	if gained > 0 || backedOff > 0 {
		m.log.Info("buckets gained", "count", gained, "conflicts", backedOff, "members", len(v.members))
	}
	m.collect(ctx, v.expiredLong)
	return nil
}

// checkDeadline stops admitting reconciles once the Lease has gone
// unrenewed for two thirds of its duration: the others may soon take the
// buckets.
func (m *Member) checkDeadline() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.renewed) < m.opts.LeaseDuration*2/3 {
		return
	}
	m.deactivateLocked()
}

// renew writes the Lease with the held buckets, creating it if need be.
func (m *Member) renew(ctx context.Context, own *coordinationv1.Lease, held string) error {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(m.opts.LeaseDuration / time.Second)
	if secs < 1 {
		secs = 1
	}
	id := m.opts.ID
	if own == nil {
		own = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: m.opts.Namespace, Name: m.name,
			Labels: map[string]string{LabelGroup: m.opts.Group},
		}}
		own.Spec.AcquireTime = &now
	}
	own = own.DeepCopy()
	own.Spec.HolderIdentity = &id
	own.Spec.LeaseDurationSeconds = &secs
	own.Spec.RenewTime = &now
	if own.Annotations == nil {
		own.Annotations = map[string]string{}
	}
	own.Annotations[AnnotationHeld] = held
	own.Annotations[AnnotationInstance] = m.instance
	var err error
	if own.ResourceVersion == "" {
		err = m.c.Create(ctx, own)
	} else {
		err = m.c.Update(ctx, own)
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.renewed = time.Now()
	m.mu.Unlock()
	return nil
}

// collect deletes Leases expired for twice their duration, of replicas
// gone for good (a Deployment's Pods get new names), unless they changed
// since they were read.
func (m *Member) collect(ctx context.Context, leases []coordinationv1.Lease) {
	for i := range leases {
		l := &leases[i]
		rv := l.ResourceVersion
		if err := m.c.Delete(ctx, l, client.Preconditions{ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			m.log.Error(err, "deleting an expired shard Lease", "lease", l.Name)
		}
	}
}
