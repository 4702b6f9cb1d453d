package main

import "testing"

func TestKeyOfPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want requestKey
	}{
		{"/api/v1/namespaces/ns/services/web", requestKey{Resource: "services"}},
		{"/api/v1/namespaces/ns/services", requestKey{Resource: "services"}},
		{"/api/v1/namespaces/ns", requestKey{Resource: "namespaces"}},
		{"/apis/apps/v1/namespaces/ns/deployments/web", requestKey{Group: "apps", Resource: "deployments"}},
		{"/apis/example.inrun.dev/v1/namespaces/ns/websites/web/status", requestKey{Group: "example.inrun.dev", Resource: "websites", Subresource: "status"}},
		{"/apis/events.k8s.io/v1/namespaces/ns/events", requestKey{Group: "events.k8s.io", Resource: "events"}},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", requestKey{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", requestKey{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}},
	} {
		if got := keyOfPath(tc.path); got != tc.want {
			t.Errorf("keyOfPath(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

func TestParseRequestTotal(t *testing.T) {
	raw := []byte(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="example.inrun.dev",resource="websites",scope="resource",subresource="status",verb="APPLY",version="v1"} 1.5e+03
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 4
apiserver_request_duration_seconds_count{verb="APPLY"} 9
`)
	got, err := parseRequestTotal(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := counts{
		{Verb: "APPLY", Group: "apps", Resource: "deployments"}:                                  9,
		{Verb: "APPLY", Group: "example.inrun.dev", Resource: "websites", Subresource: "status"}: 1500,
		{Verb: "LIST", Resource: "pods"}:                                                         4,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if n := got.sum(objectWrite); n != 1509 {
		t.Errorf("object writes = %d, want 1509 (LIST is no write)", n)
	}
}

func TestParseLabelsEscapes(t *testing.T) {
	got, err := parseLabels(`a="x,y",b="q\"uote",c=""`)
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != "x,y" || got["b"] != `q"uote` || got["c"] != "" {
		t.Errorf("parseLabels = %q", got)
	}
}
