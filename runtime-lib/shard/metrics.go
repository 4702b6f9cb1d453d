package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Served with controller-runtime's metrics, by shard id: how a replica's
// share moves as replicas come and go.
var (
	bucketsMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inrun_shard_buckets",
		Help: "Buckets of custom resources this replica reconciles (state active) and lists in its Lease (state held: active, or lost and still draining, or claimed and not yet started).",
	}, []string{"shard", "state"})
	membersMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inrun_shard_members",
		Help: "Live replicas of the shard group, this one included, as this replica last read their Leases.",
	}, []string{"shard"})
	cachedMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inrun_shard_cached_objects",
		Help: "Objects of a kind (custom resources, or children) in the caches of this replica's current epoch: those of the buckets it wants, and custom resources and children of kinds cached whole.",
	}, []string{"shard", "kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(bucketsMetric, membersMetric, cachedMetric)
}

// CountCached keeps inrun_shard_cached_objects{shard, kind} at the number
// of objects informer holds. It starts the count from zero: call it on a
// new epoch's informer before the epoch starts.
func (m *Member) CountCached(informer cache.Informer, kind string) error {
	g := cachedMetric.WithLabelValues(m.opts.ID, kind)
	g.Set(0)
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { g.Inc() },
		DeleteFunc: func(any) { g.Dec() },
	})
	return err
}

// observe sets the gauges from the Member's state; m.mu must be held.
func (m *Member) observe(members int) {
	m.observeBuckets()
	membersMetric.WithLabelValues(m.opts.ID).Set(float64(members))
}

// observeBuckets sets the bucket gauges from m.active and m.held, which
// m.mu guards.
func (m *Member) observeBuckets() {
	active, held := 0, 0
	for b := range m.active {
		if m.active[b] {
			active++
		}
		if m.held[b] {
			held++
		}
	}
	bucketsMetric.WithLabelValues(m.opts.ID, "active").Set(float64(active))
	bucketsMetric.WithLabelValues(m.opts.ID, "held").Set(float64(held))
}
