package controller

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Activity is what an operator has done so far, read from the metrics it
// serves: the test of a converged operator is that reconciling costs no
// write.
type Activity struct {
	// Writes are the write requests its clients sent (WritesMetric).
	Writes int64
	// Reconciles are the reconciles its controllers finished
	// (controller_runtime_reconcile_total).
	Reconciles int64
	// Backlog is what its controllers have still to do: queued items and
	// reconciles in progress (workqueue_depth, controller_runtime_active_workers).
	Backlog int64
}

// ActivityOf sums an operator's Activity from its metric families.
func ActivityOf(families []*dto.MetricFamily) Activity {
	var a Activity
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case WritesMetric:
				a.Writes += int64(m.GetCounter().GetValue())
			case "controller_runtime_reconcile_total":
				a.Reconciles += int64(m.GetCounter().GetValue())
			case "workqueue_depth", "controller_runtime_active_workers":
				a.Backlog += int64(m.GetGauge().GetValue())
			}
		}
	}
	return a
}

// ActivityInProcess reads the Activity of the controllers this process
// runs, from controller-runtime's registry.
func ActivityInProcess() (Activity, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return Activity{}, err
	}
	return ActivityOf(families), nil
}

// ScrapeActivity reads an operator's Activity from its metrics endpoint,
// such as http://127.0.0.1:8080/metrics.
func ScrapeActivity(ctx context.Context, url string) (Activity, error) {
	byName, err := ScrapeMetrics(ctx, url)
	if err != nil {
		return Activity{}, err
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		families = append(families, mf)
	}
	return ActivityOf(families), nil
}

// ScrapeMetrics reads the metric families a process serves at url (the
// Prometheus text format), by name.
func ScrapeMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return families, nil
}
