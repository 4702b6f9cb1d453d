package shard

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Selection is how each replica's caches select the custom resources of
// its buckets.
type Selection string

const (
	// SelectAuto is SelectServer where the API server honours shard
	// selectors, SelectLabels elsewhere (ServerSelects decides).
	SelectAuto Selection = "auto"
	// SelectLabels labels each custom resource with LabelBucket (one
	// write per custom resource) and selects by that label. It works on
	// every API server.
	SelectLabels Selection = "labels"
	// SelectServer has the API server select the custom resources by
	// their UID's hash: each list and watch of them carries the replica's
	// buckets as ListOptions.ShardSelector (Selector writes it). It needs
	// kube-apiserver's ShardedListAndWatch feature (KEP-5866, alpha in
	// 1.37) and writes no label. Children are still selected by
	// LabelOwnerBucket, which their applies carry anyway.
	SelectServer Selection = "server"
)

// ParseSelection reads a Selection as flags spell it; "" is SelectAuto.
func ParseSelection(s string) (Selection, error) {
	switch sel := Selection(s); sel {
	case "":
		return SelectAuto, nil
	case SelectAuto, SelectLabels, SelectServer:
		return sel, nil
	}
	return "", fmt.Errorf("unknown shard selection %q: want auto, labels or server", s)
}

// ServerSelects reports whether the API server honours shard selectors: it
// lists at most one Lease of namespace with a selector of every bucket and
// looks for the shardInfo an API server with ShardedListAndWatch sets on
// such a list. One without it ignores the selector and sets none.
func ServerSelects(ctx context.Context, cs kubernetes.Interface, namespace string) (bool, error) {
	all := make([]int, DefaultBuckets)
	for b := range all {
		all[b] = b
	}
	list, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: Selector(all, DefaultBuckets)})
	if err != nil {
		return false, err
	}
	return list.ShardInfo != nil, nil
}

// SelectingConfig returns a copy of cfg whose list and watch requests of
// the resources named add selector as their shardSelector, unless they
// carry one: the way to give a controller-runtime cache, which has no
// option for it, a KEP-5866 shard selector. Other requests pass unchanged.
func SelectingConfig(cfg *rest.Config, resources []schema.GroupVersionResource, selector string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &selecting{next: rt, resources: resources, selector: selector}
	})
	return cfg
}

// selecting is SelectingConfig's RoundTripper.
type selecting struct {
	next      http.RoundTripper
	resources []schema.GroupVersionResource
	selector  string
}

func (s *selecting) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !s.collection(req.URL.Path) || req.URL.Query().Has("shardSelector") {
		return s.next.RoundTrip(req)
	}
	// A RoundTripper must not change the request it is given.
	req = req.Clone(req.Context())
	q := req.URL.Query()
	q.Set("shardSelector", s.selector)
	req.URL.RawQuery = q.Encode()
	return s.next.RoundTrip(req)
}

// collection says whether path names all objects of one of the resources,
// in the cluster (/apis/G/V/R) or in a namespace
// (/apis/G/V/namespaces/NS/R): the paths lists and watches use.
func (s *selecting) collection(path string) bool {
	for _, r := range s.resources {
		prefix := "/apis/" + r.Group + "/" + r.Version + "/"
		if r.Group == "" {
			prefix = "/api/" + r.Version + "/"
		}
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		if rest == r.Resource {
			return true
		}
		parts := strings.Split(rest, "/")
		if len(parts) == 3 && parts[0] == "namespaces" && parts[2] == r.Resource {
			return true
		}
	}
	return false
}
