package reconciler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/simulate"
)

// registry is an existing HTTP API that knows nothing about Inrun: PUT
// /apps/NS/NAME registers an app and answers its state and a revision;
// DELETE unregisters it with 204.
type registry struct {
	mu       sync.Mutex
	apps     map[string]map[string]any
	revision int
	teams    []string
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.teams = append(r.teams, req.Header.Get("X-Team"))
	key := strings.TrimPrefix(req.URL.Path, "/apps/")
	switch req.Method {
	case http.MethodPut:
		var app map[string]any
		if err := json.NewDecoder(req.Body).Decode(&app); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.revision++
		r.apps[key] = app
		_ = json.NewEncoder(w).Encode(map[string]any{"state": "registered", "revision": r.revision})
	case http.MethodDelete:
		delete(r.apps, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "no", http.StatusMethodNotAllowed)
	}
}

func TestExistingAPIAsReconciler(t *testing.T) {
	reg := &registry{apps: map[string]map[string]any{}}
	server := httptest.NewServer(reg)
	defer server.Close()

	f := newAPIFixture(t, server.URL)
	bp := f.bp

	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	app := reg.apps["shop/shopfront"]
	reg.mu.Unlock()
	if app["image"] != "nginx:1" || app["replicas"] != 2.0 {
		t.Errorf("the API got %v, want the body the Blueprint maps from args", app)
	}
	status, _, _ := unstructured.NestedMap(f.get().Object, "status")
	if status["state"] != "registered" || status["revision"] != int64(1) {
		t.Errorf("status = %v, want the response mapped into state and revision", status)
	}
	cm := f.object(configMapGVK, "shop", "shopfront-registration")
	if cm == nil {
		t.Fatal("the ConfigMap the mapping returns was not applied")
	}
	if rev, _, _ := unstructured.NestedString(cm.Object, "data", "revision"); rev != "1" {
		t.Errorf("registration revision = %q, want 1", rev)
	}

	if err := f.store.Delete(context.Background(), f.get()); err != nil {
		t.Fatal(err)
	}
	f.sync()
	reg.mu.Lock()
	_, still := reg.apps["shop/shopfront"]
	teams := reg.teams
	reg.mu.Unlock()
	if still {
		t.Error("the finalizing request did not unregister the app")
	}
	if teams[0] != "shop" {
		t.Errorf("X-Team header = %q, want the namespace", teams[0])
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err == nil {
		t.Errorf("the custom resource outlived a done finalizing call; finalizers %v", live.GetFinalizers())
	}
}

func TestExistingAPIFailureKeepsChildren(t *testing.T) {
	var fail bool
	var mu sync.Mutex
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": "registered", "revision": 7})
	}))
	defer server.Close()
	f := newAPIFixture(t, server.URL)
	f.sync()
	mu.Lock()
	fail = true
	mu.Unlock()
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("errors = %v, want the API's 503", err)
	}
	if f.object(configMapGVK, "shop", "shopfront-registration") == nil {
		t.Error("a failing API caused its resource to be deleted")
	}
}

// newAPIFixture is the api.yaml Blueprint, its mapping pointed at the
// test server at url, reconciling the Website shopfront.
func newAPIFixture(t *testing.T, url string) *fixture {
	return newRemoteAPIFixture(t, "testdata/api.yaml", url, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "shopfront", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80), "expose": true},
	}})
}

// newRemoteAPIFixture compiles the Blueprint in file, points its
// reconcile.api mapping at the test server at url instead of the host it
// names, and creates cr in the simulator's store.
func newRemoteAPIFixture(t *testing.T, file, url string, cr *unstructured.Unstructured) *fixture {
	t.Helper()
	bp, err := compiler.CompileFile(file, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bp = bp.WithRemoteURL(url)
	progs, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	api, err := remote.NewAPI(bp, progs, remote.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp), cr: cr}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Remote: api, Renderer: reconciler.CELRenderer{Programs: progs}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.CreateCR(context.Background(), f.cr); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExistingAPIInAWorkflow: reconcile.api's expressions see the step,
// and its result says how the step went: Running asks again with the same
// key and the next attempt, Succeeded moves on, and a phase the contract
// does not know is a refused Result, a failed attempt.
func TestExistingAPIInAWorkflow(t *testing.T) {
	type call struct{ path, attempt, key string }
	var mu sync.Mutex
	var calls []call
	answers := map[string][]string{"Create": {"Running", "Succeeded"}, "Verify": {"Sleeping", "Succeeded"}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{r.URL.Path, r.Header.Get("X-Attempt"), r.Header.Get("X-Key")})
		step := strings.TrimPrefix(r.URL.Path, "/steps/")
		phase := answers[step][0]
		answers[step] = answers[step][1:]
		_ = json.NewEncoder(w).Encode(map[string]any{"phase": phase, "message": step + " is " + phase})
	}))
	defer server.Close()
	f := newRemoteAPIFixture(t, "testdata/api-workflow.yaml", server.URL, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "db", "namespace": "shop"},
		"spec":     map[string]any{"image": "pg:16"},
	}})
	for range 4 {
		f.sync()
	}
	uid := string(f.get().GetUID())
	want := []call{
		{"/steps/Create", "1", uid + "/1/Create/1"},
		{"/steps/Create", "2", uid + "/1/Create/1"},
		{"/steps/Verify", "1", uid + "/1/Verify/2"},
		{"/steps/Verify", "2", uid + "/1/Verify/2"},
	}
	mu.Lock()
	got := calls
	mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("calls = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %+v; want %+v", i+1, got[i], want[i])
		}
	}
	var ws reconciler.WorkflowStatus
	raw, _, _ := unstructured.NestedMap(f.get().Object, "status", reconciler.WorkflowField)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ws); err != nil {
		t.Fatal(err)
	}
	if ws.Phase != reconciler.WorkflowSucceeded || len(ws.Steps) != 2 {
		t.Fatalf("status.workflow = %+v; want Succeeded after Create and Verify", ws)
	}
	if s := ws.Steps[0]; s.Attempts != 2 || s.Failures != 0 || s.Message != "Create is Succeeded" {
		t.Errorf("Create = %+v; want 2 attempts (Running, then Succeeded)", s)
	}
	if s := ws.Steps[1]; s.Attempts != 2 || s.Failures != 1 {
		t.Errorf("Verify = %+v; want the unknown phase Sleeping counted as a failed attempt", s)
	}
	if last, _, _ := unstructured.NestedString(f.get().Object, "status", "last"); last != "Verify" {
		t.Errorf("status.last = %q; want the step the mapping read", last)
	}
}
