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
	"sync"
	"time"

	"k8s.io/client-go/rest"
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

// writeCounter counts the write requests a client sends, by key, and
// remembers when the last one was sent. It wraps a rest.Config's transport.
type writeCounter struct {
	mu     sync.Mutex
	counts counts
	last   time.Time
}

func newWriteCounter() *writeCounter { return &writeCounter{counts: counts{}} }

// instrument makes every client built from cfg count its writes in w.
func (w *writeCounter) instrument(cfg *rest.Config) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return countingTransport{w: w, next: next}
	})
}

// snapshot returns the counts so far and the time of the last write.
func (w *writeCounter) snapshot() (counts, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts.clone(), w.last
}

type countingTransport struct {
	w    *writeCounter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if verb := clientVerb(r); verb != "" {
		key := keyOfPath(r.URL.Path)
		key.Verb = verb
		t.w.mu.Lock()
		t.w.counts[key]++
		t.w.last = time.Now()
		t.w.mu.Unlock()
	}
	return t.next.RoundTrip(r)
}

// clientVerb names a write request as the API server's metrics do, or
// returns "" for a read.
func clientVerb(r *http.Request) string {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		return r.Method
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	}
	return ""
}

// keyOfPath reads the group, resource and subresource of an API path such
// as /apis/apps/v1/namespaces/ns/deployments/name/status.
func keyOfPath(path string) requestKey {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var k requestKey
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		k.Group = parts[1]
		parts = parts[3:]
	default:
		k.Resource = path
		return k
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) > 0 {
		k.Resource = parts[0]
	}
	if len(parts) > 2 {
		k.Subresource = parts[2]
	}
	return k
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
