package runner_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/internal/fakedns"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/sdk"
)

// These tests misbehave as a remote reconciler would, against the real API
// server, and check that the runtime harms nothing it does not own, always
// says what is wrong, and recovers without an edit.

var appGVK = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "App"}

// scripted is a remote reconciler whose replies the test sets, as raw
// JSON, so that it can reply what the sdk would not let a Go reconciler.
type scripted struct {
	mu    sync.Mutex
	reply func(req *sdk.Request) (int, string)
	calls atomic.Int64
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.calls.Add(1)
	s.mu.Lock()
	reply := s.reply
	s.mu.Unlock()
	code, out := reply(req)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, out)
}

func (s *scripted) set(fn func(req *sdk.Request) (int, string)) {
	s.mu.Lock()
	s.reply = fn
	s.mu.Unlock()
}

// result is a reply of 200 with a ReconcileResult made of fields.
func result(fields map[string]any) func(*sdk.Request) (int, string) {
	return func(req *sdk.Request) (int, string) {
		m := map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult}
		for k, v := range fields {
			m[k] = v
		}
		if req.Finalizing {
			m = map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult, "done": true}
		}
		raw, _ := json.Marshal(m)
		return http.StatusOK, string(raw)
	}
}

// newAppFixture runs the App Blueprint against a scripted reconciler that
// first answers with an empty Result.
func newAppFixture(t *testing.T) (*fixture, *scripted) {
	t.Helper()
	f := newFixture(t)
	s := &scripted{}
	s.set(result(nil))
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	bp, err := compiler.CompileFile("testdata/app.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bp = bp.WithRemoteURL(srv.URL + "/reconcile")
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.MaxBackoff = 2 * time.Second })
	return f, s
}

func (f *fixture) createApp(name string, spec map[string]any) {
	f.t.Helper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(appGVK)
	app.SetName(name)
	app.SetNamespace(f.ns)
	app.Object["spec"] = spec
	if err := f.admin.Create(context.Background(), app); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) patchApp(name string, spec map[string]any) {
	f.t.Helper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(appGVK)
	app.SetName(name)
	app.SetNamespace(f.ns)
	raw, _ := json.Marshal(map[string]any{"spec": spec})
	if err := f.admin.Patch(context.Background(), app, client.RawPatch("application/merge-patch+json", raw)); err != nil {
		f.t.Fatal(err)
	}
}

// appCondition is "" once the App's condition has status and its message
// contains msg.
func (f *fixture) appCondition(name, condType, status, msg string) func() string {
	return func() string {
		app, err := f.get(appGVK, f.ns, name)
		if err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] != condType {
				continue
			}
			got, _ := m["message"].(string)
			if m["status"] != status || !strings.Contains(got, msg) {
				return condType + " is " + m["status"].(string) + ": " + got
			}
			return ""
		}
		return "no " + condType + " condition yet"
	}
}

// TestNoTakeover has the reconciler return a Secret a person created, then
// stop returning it: the Secret must be neither overwritten, labelled,
// owned, nor pruned, and the conflict must be reported.
func TestNoTakeover(t *testing.T) {
	f, s := newAppFixture(t)
	ctx := context.Background()
	precious := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "precious", Namespace: f.ns},
		Data:       map[string][]byte{"password": []byte("original")},
	}
	if err := f.admin.Create(ctx, precious); err != nil {
		t.Fatal(err)
	}
	s.set(result(map[string]any{"resources": []any{map[string]any{
		"id": "secret", "apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "precious"},
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("overwritten"))},
	}}}))
	f.createApp("thief", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "the conflict reported", f.appCondition("thief", "Degraded", "True", "Secret "+f.ns+"/precious already exists and was not created for this custom resource"))
	f.eventually(30*time.Second, "an Event naming the object", func() string {
		events := &eventsv1.EventList{}
		if err := f.admin.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == reconciler.ReasonConflict && e.Regarding.Name == "thief" && strings.Contains(e.Note, "precious") {
				return ""
			}
		}
		return "no " + reconciler.ReasonConflict + " Event"
	})
	untouched := func() {
		t.Helper()
		got := &corev1.Secret{}
		if err := f.admin.Get(ctx, client.ObjectKeyFromObject(precious), got); err != nil {
			t.Fatalf("the Secret a person created: %v", err)
		}
		if string(got.Data["password"]) != "original" || len(got.Labels) > 0 || len(got.OwnerReferences) > 0 {
			t.Fatalf("the Secret a person created was changed: data %q, labels %v, owners %v", got.Data["password"], got.Labels, got.OwnerReferences)
		}
	}
	untouched()

	// The reconciler stops returning it: nothing of Inrun's is pruned,
	// and the Secret it never owned stays.
	s.set(result(map[string]any{"status": map[string]any{"phase": "Running"}}))
	f.patchApp("thief", map[string]any{"note": "again"})
	f.eventually(60*time.Second, "recovered", f.appCondition("thief", "Ready", "True", ""))
	untouched()
}

// TestTemplateNoTakeover has a template child whose name a person's
// ConfigMap already has.
func TestTemplateNoTakeover(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-site", Namespace: f.ns}, Data: map[string]string{"share": "mine"}}
	if err := f.admin.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	f.start(f.cfg, []string{f.ns}, nil)
	// The copy child writes ConfigMap <ns>-site in copyTo: here, the same
	// namespace, where the person's ConfigMap is.
	f.createSite("site", map[string]any{"replicas": int64(1), "copyTo": f.ns})
	f.eventually(60*time.Second, "the conflict reported", f.condition("site", "Degraded", "True"))
	site, _ := f.get(siteGVK, f.ns, "site")
	if msg := conditionMessage(site, "Degraded"); !strings.Contains(msg, "ConfigMap "+f.ns+"/"+f.ns+"-site already exists and was not created for this custom resource") {
		t.Errorf("Degraded says %q; want the conflict with the ConfigMap", msg)
	}
	got := &corev1.ConfigMap{}
	if err := f.admin.Get(ctx, client.ObjectKeyFromObject(mine), got); err != nil {
		t.Fatal(err)
	}
	if got.Data["share"] != "mine" || len(got.Labels) > 0 || len(got.OwnerReferences) > 0 {
		t.Errorf("the person's ConfigMap was changed: data %v, labels %v, owners %v", got.Data, got.Labels, got.OwnerReferences)
	}
	// The children that do not conflict are applied all the same.
	f.eventually(60*time.Second, "the Deployment", exists(f, deploymentGVK, f.ns, "site"))
}

// TestRefusedResultIsRetried: a Result refused for an undeclared kind is
// asked for again with backoff, so that a fixed reconciler is heard
// without anyone editing the custom resource.
func TestRefusedResultIsRetried(t *testing.T) {
	f, s := newAppFixture(t)
	s.set(result(map[string]any{"resources": []any{map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
	}}}))
	f.createApp("refused", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "refused", f.appCondition("refused", "Degraded", "True", "was refused"))
	s.set(result(map[string]any{"status": map[string]any{"phase": "Running"}}))
	f.eventually(60*time.Second, "the fixed reconciler heard", f.appCondition("refused", "Ready", "True", ""))
}

// TestStatusTheAPIServerRefuses: the reconciler returns a status the CRD
// does not allow, then one too large for any object. Either way the
// custom resource must stop saying Ready and say why.
func TestStatusTheAPIServerRefuses(t *testing.T) {
	f, s := newAppFixture(t)
	s.set(result(map[string]any{"status": map[string]any{"phase": "Running", "count": int64(1)}}))
	f.createApp("status", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "ready", f.appCondition("status", "Ready", "True", ""))

	s.set(result(map[string]any{"status": map[string]any{"phase": "Running", "count": "many"}}))
	f.patchApp("status", map[string]any{"note": "typed"})
	f.eventually(60*time.Second, "a refused status reported", f.appCondition("status", "Degraded", "True", "writing status"))
	f.eventually(10*time.Second, "not Ready", f.appCondition("status", "Ready", "False", ""))

	huge := strings.Repeat("x", sdk.MaxStatusBytes)
	s.set(result(map[string]any{"status": map[string]any{"phase": huge}}))
	f.patchApp("status", map[string]any{"note": "huge"})
	f.eventually(60*time.Second, "an oversized status refused", f.appCondition("status", "Degraded", "True", "status is "))
	f.eventually(10*time.Second, "not Ready", f.appCondition("status", "Ready", "False", ""))
}

// TestRemoteChildrenCountForReady: a Deployment the reconciler returns
// keeps the custom resource from Ready until its replicas are.
func TestRemoteChildrenCountForReady(t *testing.T) {
	f, s := newAppFixture(t)
	deployment := func(replicas int64, nodeSelector map[string]any) map[string]any {
		return map[string]any{
			"id": "web", "apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{
				"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"nodeSelector": nodeSelector,
						"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}},
				},
			},
		}
	}
	// No node matches: its Pods never run.
	s.set(result(map[string]any{"resources": []any{deployment(3, map[string]any{"inrun.dev/no-such-node": "true"})}}))
	f.createApp("web", map[string]any{"replicas": int64(3)})
	f.eventually(60*time.Second, "not ready", f.appCondition("web", "Ready", "False", "Deployment "+f.ns+"/web (not ready)"))
	time.Sleep(3 * time.Second)
	f.eventually(time.Second, "still not ready", f.appCondition("web", "Ready", "False", "not ready"))

	s.set(result(map[string]any{"resources": []any{deployment(1, nil)}}))
	f.patchApp("web", map[string]any{"replicas": int64(1)})
	f.eventually(90*time.Second, "ready once its Pod is", f.appCondition("web", "Ready", "True", ""))
}

// TestEventsKeepTheirMessages: two failures with the same reason and
// different messages are two Events, each with its own message.
func TestEventsKeepTheirMessages(t *testing.T) {
	f, s := newAppFixture(t)
	ctx := context.Background()
	var n atomic.Int64
	s.set(func(*sdk.Request) (int, string) {
		if n.Add(1) == 1 {
			return http.StatusBadRequest, "first: the database is read-only"
		}
		return http.StatusBadRequest, "second: the quota is exhausted"
	})
	f.createApp("events", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "both messages recorded", func() string {
		events := &eventsv1.EventList{}
		if err := f.admin.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		first, second := false, false
		for _, e := range events.Items {
			if e.Regarding.Name != "events" || e.Reason != "ReconcilerFailed" {
				continue
			}
			first = first || strings.Contains(e.Note, "database is read-only")
			second = second || strings.Contains(e.Note, "quota is exhausted")
		}
		if !first || !second {
			return "the Events say: first " + itoa(boolInt(first)) + ", second " + itoa(boolInt(second))
		}
		return ""
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestConfigMapEdits: the runtime follows its Blueprint ConfigMaps. An
// edit that breaks the Blueprint is reported on the ConfigMap and the last
// good Blueprint keeps reconciling; an edit that compiles takes effect
// without restarting the process.
func TestConfigMapEdits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bpSrc, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site-blueprint", Namespace: f.ns, Labels: load.ConfigMapSelector()},
		Data:       map[string]string{load.KeyBlueprint: string(bpSrc), "crd.yaml": string(crd)},
	}
	if err := f.admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
		o.Blueprints = nil
		o.ConfigMaps = &runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMap}
	})
	f.createSite("edited", map[string]any{"replicas": int64(1), "expose": false})
	f.eventually(60*time.Second, "ready", f.replicas(f.ns, "edited", 1))

	// Broken: reported, and the last good Blueprint goes on.
	cm.Data[load.KeyBlueprint] = strings.Replace(string(bpSrc), "${self.spec.replicas}", "${self.spec.replcas}", 1)
	if err := f.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the broken edit reported on the ConfigMap", func() string {
		events := &eventsv1.EventList{}
		if err := f.admin.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == cm.Name && e.Reason == runner.ReasonBlueprintInvalid {
				if !strings.Contains(e.Note, "unknown field self.spec.replcas") || !strings.Contains(e.Note, "last good Blueprint") {
					return "the Event says: " + e.Note
				}
				return ""
			}
		}
		return "no " + runner.ReasonBlueprintInvalid + " Event on the ConfigMap"
	})
	f.patchSite("edited", map[string]any{"replicas": int64(2)})
	f.eventually(60*time.Second, "still reconciled by the last good Blueprint", f.replicas(f.ns, "edited", 2))

	// Fixed, with a change: it takes effect.
	cm.Data[load.KeyBlueprint] = string(bpSrc) + "    edited: \"yes\"\n"
	if err := f.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.eventually(60*time.Second, "the new Blueprint runs", func() string {
		site, err := f.get(siteGVK, f.ns, "edited")
		if err != nil {
			return err.Error()
		}
		if v, _, _ := unstructured.NestedString(site.Object, "status", "edited"); v != "yes" {
			return "status.edited is " + v
		}
		return ""
	})
}

// TestAPICreatesOnce makes the status write after a successful create fail
// (an admission policy refuses it while the DNSRecord has a label), so the
// runtime cannot keep the id the API assigned. It calls again; an API that
// honours the idempotency key answers the first record, one that does not
// answers 409 and the record is adopted. Either way the API ends with
// exactly one record.
func TestAPICreatesOnce(t *testing.T) {
	for _, honour := range []bool{true, false} {
		name := "ignores-keys"
		if honour {
			name = "honours-keys"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			dns := fakedns.New()
			dns.HonourKeys = honour
			srv := httptest.NewServer(dns)
			t.Cleanup(srv.Close)
			bp, err := compiler.CompileFile("../reconciler/testdata/records.yaml", compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			bp = bp.WithRemoteURL(srv.URL)
			if err := runner.InstallCRDs(ctx, f.cfg, []*ir.Blueprint{bp}); err != nil {
				t.Fatal(err)
			}
			denyStatusWrites(t, f, "deny-status-"+f.ns)
			f.bp = bp
			f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.MaxBackoff = time.Second })

			rec := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.inrun.dev/v1", "kind": "DNSRecord",
				"metadata": map[string]any{"name": "www", "namespace": f.ns, "labels": map[string]any{"inrun.test/deny-status": "true"}},
				"spec":     map[string]any{"name": "www." + f.ns + ".example", "value": "10.0.0.1"},
			}}
			if err := f.admin.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			// The runtime has called the API, and failed to write status
			// at least twice.
			f.eventually(60*time.Second, "calls made while status is refused", func() string {
				if dns.Creates() == 0 {
					return "no record created yet"
				}
				return ""
			})
			time.Sleep(3 * time.Second) // a few retries, backoff capped at 1s
			if st, _, _ := unstructured.NestedMap(get(t, f, rec).Object, "status"); st["recordId"] != nil {
				t.Fatalf("status was written although the policy refuses it: %v", st)
			}
			// Status may be written again.
			live := get(t, f, rec)
			live.SetLabels(nil)
			if err := f.admin.Update(ctx, live); err != nil {
				t.Fatal(err)
			}
			f.eventually(60*time.Second, "the record's id kept", func() string {
				st, _, _ := unstructured.NestedMap(get(t, f, rec).Object, "status")
				if st["recordId"] == nil {
					return "no status.recordId yet"
				}
				return ""
			})
			recs := dns.Records()
			if len(recs) != 1 {
				t.Fatalf("the API holds %d records, want exactly 1: %v", len(recs), recs)
			}
			st, _, _ := unstructured.NestedMap(get(t, f, rec).Object, "status")
			if _, ok := recs[st["recordId"].(string)]; !ok {
				t.Errorf("status.recordId %v names no record of %v", st["recordId"], recs)
			}
		})
	}
}

func get(t *testing.T, f *fixture, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := f.get(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// denyStatusWrites installs a ValidatingAdmissionPolicy that refuses
// status writes of DNSRecords labelled inrun.test/deny-status in f's
// namespace.
func denyStatusWrites(t *testing.T, f *fixture, name string) {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"example.inrun.dev"}, APIVersions: []string{"v1"}, Resources: []string{"dnsrecords/status"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('inrun.test/deny-status' in object.metadata.labels)`,
				Message:    "status writes are refused while inrun.test/deny-status is set",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.ns},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := f.admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.admin.Delete(context.Background(), obj) })
	}
	// Policies take effect a moment after they are created: wait until a
	// write it refuses is refused.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "DNSRecord",
		"metadata": map[string]any{"name": "probe", "namespace": f.ns, "labels": map[string]any{"inrun.test/deny-status": "true"}},
		"spec":     map[string]any{"name": "probe", "value": "x"},
	}}
	if err := f.admin.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the policy in force", func() string {
		p := get(t, f, probe)
		_ = unstructured.SetNestedField(p.Object, "x", "status", "value")
		if err := f.admin.Status().Update(ctx, p); err == nil || !strings.Contains(err.Error(), "refused") {
			return fmt.Sprintf("a status write was not refused: %v", err)
		}
		return ""
	})
	if err := f.admin.Delete(ctx, probe); err != nil {
		t.Fatal(err)
	}
}

// siteConfigMap returns a maker of the Blueprint ConfigMap of
// testdata/blueprint.yaml (with its CRD), named so that no other test's
// controller holds its name in this process: each call a new object.
func (f *fixture) siteConfigMap() func() *corev1.ConfigMap {
	f.t.Helper()
	crd, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		f.t.Fatal(err)
	}
	src := uniquelyNamed(f.t, "testdata/blueprint.yaml", "site")
	return func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "site-blueprint", Namespace: f.ns, Labels: load.ConfigMapSelector()},
			Data:       map[string]string{load.KeyBlueprint: src, "crd.yaml": string(crd)},
		}
	}
}

// uniquelyNamed returns the Blueprint in file, named name, renamed to a
// name no other test's controller holds in this process: controller-runtime
// refuses a second controller of a name unless told to skip the check.
func uniquelyNamed(t *testing.T, file, name string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	unique := name + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	return strings.Replace(string(src), "  name: "+name+"\n", "  name: "+unique+"\n", 1)
}

// TestConfigMapEditRestartsInProcess: a good edit of a Blueprint ConfigMap
// restarts its controllers under their old names, which controller-runtime
// refuses by default; the runtime must go on, as inrun run runs it, without
// SkipNameValidation.
func TestConfigMapEditRestartsInProcess(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cm := f.siteConfigMap()()
	src := cm.Data[load.KeyBlueprint]
	if err := f.admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	rt := f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
		o.Blueprints = nil
		o.ConfigMaps = &runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMap}
		o.SkipNameValidation = false
	})
	f.createSite("restarted", map[string]any{"replicas": int64(1), "expose": false})
	f.eventually(60*time.Second, "ready", f.replicas(f.ns, "restarted", 1))

	cm.Data[load.KeyBlueprint] = src + "    edited: \"yes\"\n"
	if err := f.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.eventually(60*time.Second, "the new Blueprint runs", func() string {
		select {
		case err := <-rt.done:
			t.Fatalf("the runtime stopped on a good edit: %v", err)
		default:
		}
		site, err := f.get(siteGVK, f.ns, "restarted")
		if err != nil {
			return err.Error()
		}
		if v, _, _ := unstructured.NestedString(site.Object, "status", "edited"); v != "yes" {
			return "status.edited is " + v
		}
		return ""
	})
}

// TestConfigMapsGoneAndBack: every Blueprint ConfigMap deleted, then
// created again (helm uninstall, then install), with leader election: the
// runtime stops the controllers and starts them again. The manager stopped
// as it waited for its Lease said "leader election lost", on which the
// runtime waited for ever.
// freeAddr returns a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// healthy says what is wrong with /healthz at addr, "" when it answers 200.
func healthy(addr string) func() string { return answersOK("http://" + addr + "/healthz") }

// answersOK says what is wrong with a GET of url, "" when it answers 200.
func answersOK(url string) func() string {
	return func() string {
		resp, err := http.Get(url)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		return map[bool]string{true: "", false: resp.Status}[resp.StatusCode == http.StatusOK]
	}
}

// TestBrokenConfigMapAtStart: a runtime started while its only Blueprint
// ConfigMap does not compile runs nothing, but answers its probes (it did
// not: a liveness probe would have restarted it for ever), and runs the
// Blueprint once the ConfigMap is fixed.
func TestBrokenConfigMapAtStart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	newCM := f.siteConfigMap()
	broken := newCM()
	broken.Data[load.KeyBlueprint] += "\nonReconcile: {not: a list}\n"
	if err := f.admin.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	probes := freeAddr(t)
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
		o.Blueprints = nil
		o.ConfigMaps = &runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMap}
		o.LeaderElection, o.LeaderElectionNamespace = true, f.ns // as the chart runs it; and start waits for no sync
		o.ProbeAddr = probes
	})
	f.eventually(20*time.Second, "the probes answer while the only ConfigMap is broken", healthy(probes))
	fixed := newCM()
	live := &corev1.ConfigMap{}
	if err := f.admin.Get(ctx, client.ObjectKeyFromObject(fixed), live); err != nil {
		t.Fatal(err)
	}
	live.Data = fixed.Data
	if err := f.admin.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	f.createSite("fixed", map[string]any{"replicas": int64(1), "expose": false})
	f.eventually(90*time.Second, "a Site is reconciled once the ConfigMap is fixed", f.replicas(f.ns, "fixed", 1))
}

func TestConfigMapsGoneAndBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	newCM := f.siteConfigMap()
	if err := f.admin.Create(ctx, newCM()); err != nil {
		t.Fatal(err)
	}
	probes := freeAddr(t)
	rt := f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
		o.Blueprints = nil
		o.ConfigMaps = &runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMap}
		o.LeaderElection, o.LeaderElectionNamespace = true, f.ns
		o.ProbeAddr = probes
	})
	f.createSite("before", map[string]any{"replicas": int64(1), "expose": false})
	f.eventually(90*time.Second, "ready", f.replicas(f.ns, "before", 1))

	for i := range 2 {
		if err := f.admin.Delete(ctx, newCM()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// No Blueprint runs, and so no manager (stopped within the
			// seconds waited): the probes answer still, or a liveness
			// probe would restart the runtime.
			time.Sleep(3 * time.Second)
			f.eventually(10*time.Second, "the probes answer with no Blueprint", healthy(probes))
		}
		time.Sleep(time.Second)
		if err := f.admin.Create(ctx, newCM()); err != nil {
			t.Fatal(err)
		}
	}
	f.createSite("after", map[string]any{"replicas": int64(1), "expose": false})
	f.eventually(90*time.Second, "a Site made after the ConfigMaps came back is reconciled", func() string {
		select {
		case err := <-rt.done:
			t.Fatalf("the runtime stopped: %v", err)
		default:
		}
		return f.replicas(f.ns, "after", 1)()
	})
	rt.cancel()
	select {
	case err := <-rt.done:
		rt.done <- err // for the cleanup's stop
	case <-time.After(45 * time.Second):
		t.Fatal("the runtime did not stop in 45s after its context was cancelled")
	}
}

// TestSecretStringDataConverges: a Secret written with stringData, which
// the API server moves into data, is not applied again once it holds what
// the template says.
func TestSecretStringDataConverges(t *testing.T) {
	f := newFixture(t)
	bp, err := compiler.CompileFile("testdata/secret.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	rt := f.start(f.cfg, []string{f.ns}, nil)
	f.createSite("vault", map[string]any{"replicas": int64(3)})
	f.eventually(60*time.Second, "the Secret", func() string {
		s := &corev1.Secret{}
		if err := f.admin.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "vault-credentials"}, s); err != nil {
			return err.Error()
		}
		if string(s.Data["replicas"]) != "3" {
			return "data.replicas is " + string(s.Data["replicas"])
		}
		return ""
	})
	f.eventually(30*time.Second, "ready", f.condition("vault", "Ready", "True"))
	time.Sleep(2 * time.Second) // let the last writes' events pass
	before := rt.writes.Load()
	// Reconcile it again, several times: a label change is one reason.
	for i := range 3 {
		site, err := f.get(siteGVK, f.ns, "vault")
		if err != nil {
			t.Fatal(err)
		}
		site.SetLabels(map[string]string{"poke": strconv.Itoa(i)})
		if err := f.admin.Update(context.Background(), site); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if n := rt.writes.Load() - before; n != 0 {
		t.Errorf("the converged Site was written %d times on its reconciles; want none", n)
	}
}
