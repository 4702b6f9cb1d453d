package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
)

// requestKey names a kind of API request as the API server's
// apiserver_request_total metric labels it.
type requestKey struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
}

// String reads like "APPLY deployments.apps" or "APPLY websites.example.inrun.dev/status".
func (k requestKey) String() string {
	s := k.Verb + " " + k.Resource
	if k.Group != "" {
		s += "." + k.Group
	}
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	return s
}

// writeVerbs are the verbs that change something; apiserver_request_total
// reports server-side apply as APPLY rather than PATCH.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// websiteGroup is the API group of the Website kind.
const websiteGroup = "example.inrun.dev"

// objectWrite reports whether k writes one of the objects a Website is made
// of: the Website itself (status included), its Deployment or its Service.
// Others' writes to those kinds go to other subresources (the Deployment
// controller writes deployments/status) or are left out by the caller (the
// client that creates and edits the Websites).
func objectWrite(k requestKey) bool {
	if !writeVerbs[k.Verb] {
		return false
	}
	switch {
	case k.Group == websiteGroup && k.Resource == "websites":
		return true
	case k.Group == "apps" && k.Resource == "deployments", k.Group == "" && k.Resource == "services":
		return k.Subresource == ""
	}
	return false
}

// eventWrite reports whether k records an Event, in either API.
func eventWrite(k requestKey) bool {
	return writeVerbs[k.Verb] && k.Resource == "events" && (k.Group == "" || k.Group == "events.k8s.io")
}

// counts are request counts by key.
type counts map[requestKey]int64

func (c counts) sub(o counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range o {
		if _, ok := c[k]; !ok {
			out[k] = -v
		}
	}
	return out
}

func (c counts) sum(keep func(requestKey) bool) int64 {
	var n int64
	for k, v := range c {
		if keep(k) {
			n += v
		}
	}
	return n
}

// byName renders c for JSON and for people, writes only.
func (c counts) byName() map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		if writeVerbs[k.Verb] && v != 0 {
			out[k.String()] += v
		}
	}
	return out
}

func (c counts) clone() counts {
	out := make(counts, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// writeCounter counts the write requests a client sends with the runtime's
// own write metrics, in a registry of its own so that the loader's and the
// limit's counts stay apart in this one process.
type writeCounter struct {
	metrics *runtimecontroller.WriteMetrics
	reg     *prometheus.Registry
}

func newWriteCounter() *writeCounter {
	w := &writeCounter{metrics: runtimecontroller.NewWriteMetrics(), reg: prometheus.NewRegistry()}
	w.reg.MustRegister(w.metrics.Collectors()...)
	return w
}

// instrument makes every client built from cfg count its writes in w.
func (w *writeCounter) instrument(cfg *rest.Config) { w.metrics.Instrument(cfg) }

// snapshot returns the counts so far and the time of the last write.
func (w *writeCounter) snapshot() (counts, time.Time) {
	families, err := w.reg.Gather()
	if err != nil {
		// A registry holding only two well-formed collectors cannot fail.
		panic(err)
	}
	st := statsOf(families)
	return st.Writes, st.LastWrite
}

// statsOf reads an operator's figures from its metrics: its writes from
// runtime-lib's write metrics and its reconciles from controller-runtime's.
// Reconciles is -1 where controller-runtime's metric is absent.
func statsOf(families []*dto.MetricFamily) opStats {
	st := opStats{Writes: counts{}, Reconciles: -1}
	for _, mf := range families {
		switch mf.GetName() {
		case runtimecontroller.WritesMetric:
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				k := requestKey{Verb: l["verb"], Group: l["group"], Resource: l["resource"], Subresource: l["subresource"]}
				st.Writes[k] += int64(m.GetCounter().GetValue())
			}
		case runtimecontroller.LastWriteMetric:
			for _, m := range mf.GetMetric() {
				if v := m.GetGauge().GetValue(); v > 0 {
					st.LastWrite = time.Unix(0, int64(v*1e9))
				}
			}
		case "workqueue_depth", "controller_runtime_active_workers":
			for _, m := range mf.GetMetric() {
				st.Backlog += int64(m.GetGauge().GetValue())
			}
		case "controller_runtime_reconcile_total":
			st.Reconciles = 0
			for _, m := range mf.GetMetric() {
				st.Reconciles += int64(m.GetCounter().GetValue())
			}
		}
	}
	return st
}

// scrapeStats reads an operator's figures from its metrics endpoint.
func scrapeStats(ctx context.Context, url string) (opStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return opStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return opStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return opStats{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return opStats{}, fmt.Errorf("GET %s: %w", url, err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		families = append(families, mf)
	}
	return statsOf(families), nil
}

// apiserverRequests scrapes apiserver_request_total from kube-apiserver's
// /metrics: every request the API server has served, by verb, group,
// resource and subresource, whoever sent it.
func apiserverRequests(ctx context.Context, rc rest.Interface) (counts, error) {
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver /metrics: %w", err)
	}
	return parseRequestTotal(raw)
}

const requestTotal = "apiserver_request_total{"

// parseRequestTotal reads the apiserver_request_total samples of a
// Prometheus text exposition, summing over the labels it does not keep
// (code, scope, component, dry run, version).
func parseRequestTotal(raw []byte) (counts, error) {
	out := counts{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, requestTotal) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, fmt.Errorf("malformed sample %q", line)
		}
		labels, err := parseLabels(line[len(requestTotal):end])
		if err != nil {
			return nil, fmt.Errorf("malformed sample %q: %w", line, err)
		}
		if labels["dry_run"] != "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(line[end+1:])[0], 64)
		if err != nil {
			return nil, fmt.Errorf("malformed sample %q: %w", line, err)
		}
		out[requestKey{Verb: labels["verb"], Group: labels["group"], Resource: labels["resource"], Subresource: labels["subresource"]}] += int64(v)
	}
	return out, sc.Err()
}

// parseLabels reads name="value" pairs separated by commas.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return nil, fmt.Errorf("no value in %q", s)
		}
		name := s[:eq]
		rest := s[eq+1:]
		// strconv.QuotedPrefix understands the escapes Prometheus uses.
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, err
		}
		value, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, err
		}
		out[name] = value
		s = strings.TrimPrefix(rest[len(quoted):], ",")
	}
	return out, nil
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]int64) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
