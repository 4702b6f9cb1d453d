package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
)

var (
	//go:embed testdata/blueprint.yaml
	blueprintYAML string
	//go:embed testdata/crd.yaml
	crdYAML string
)

// placeholderURL is the reconciler URL in testdata/blueprint.yaml, which
// the matrix replaces with its own reconciler's.
const placeholderURL = "http://127.0.0.1:1/reconcile"

// namespacePrefix starts the name of every namespace the matrix makes.
const namespacePrefix = "faults-"

// matrix is one run of the fault matrix: a control plane, the scripted
// reconciler, the tracker, and the `inrun run` processes of the rows.
type matrix struct {
	opts    *options
	out     io.Writer // progress
	cluster *localcluster.Cluster
	cfg     *rest.Config
	c       client.Client
	rec     *scripted
	track   *tracker

	// dir holds the kubeconfig, the Blueprint with the reconciler's URL,
	// and logDir the runtimes' logs.
	dir        string
	logDir     string
	kubeconfig string
	bpPath     string
	bpSource   string
	inrun      string

	// shared is the runtime of the rows that need no process of their own.
	shared *inrunProc
}

// buildInrun builds cmd/inrun into dir, as `go build` does.
func buildInrun(ctx context.Context, dir string, progress io.Writer) (string, error) {
	bin := filepath.Join(dir, "inrun")
	fmt.Fprintf(progress, "Building inrun (go build ./cmd/inrun)\n")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/inrun/inrun/cmd/inrun")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/inrun: %w\n%s", err, out)
	}
	return bin, nil
}

// setUp starts the control plane and the reconciler, installs the CRD and
// writes the files the runtimes read.
func (m *matrix) setUp(ctx context.Context) error {
	var err error
	if m.dir, err = os.MkdirTemp("", "inrun-faults-"); err != nil {
		return err
	}
	m.logDir = filepath.Join(m.dir, "logs")
	if err := os.Mkdir(m.logDir, 0o755); err != nil {
		return err
	}
	if m.inrun = m.opts.inrun; m.inrun == "" {
		if m.inrun, err = buildInrun(ctx, m.dir, m.out); err != nil {
			return err
		}
	}
	if m.rec, err = startReconciler(); err != nil {
		return err
	}
	m.bpSource = strings.Replace(blueprintYAML, placeholderURL, m.rec.URL(), 1)
	m.bpPath = filepath.Join(m.dir, "blueprint.yaml")
	if err := os.WriteFile(m.bpPath, []byte(m.bpSource), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.dir, "crd.yaml"), []byte(crdYAML), 0o644); err != nil {
		return err
	}
	bp, err := compiler.CompileFile(m.bpPath, compiler.Options{})
	if err != nil {
		return err
	}

	m.cluster, err = localcluster.Start(ctx, localcluster.Options{Mode: localcluster.Minimal, Progress: m.out})
	if err != nil {
		return err
	}
	m.cfg = m.cluster.RESTConfig()
	m.cfg.QPS = -1
	m.kubeconfig = filepath.Join(m.dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(m.kubeconfig, m.cfg); err != nil {
		return err
	}
	if m.c, err = client.New(m.cfg, client.Options{Scheme: runner.Scheme()}); err != nil {
		return err
	}
	if err := runner.InstallCRDs(ctx, m.cfg, []*ir.Blueprint{bp}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(m.cfg)
	if err != nil {
		return err
	}
	m.track, err = startTracker(ctx, dyn)
	return err
}

// tearDown stops everything setUp started. It keeps the logs when keep is
// set and says where they are.
func (m *matrix) tearDown(keep bool) {
	if m.shared != nil {
		m.shared.stop()
	}
	if m.track != nil {
		m.track.stop()
	}
	if m.rec != nil {
		m.rec.close()
	}
	if m.cluster != nil {
		if err := m.cluster.Stop(); err != nil {
			fmt.Fprintln(m.out, "faults: stopping the control plane:", err)
		}
	}
	if m.dir == "" {
		return
	}
	if keep {
		fmt.Fprintf(m.out, "The runtimes' logs are in %s\n", m.logDir)
		return
	}
	os.RemoveAll(m.dir)
}

func (m *matrix) printf(format string, args ...any) {
	fmt.Fprintf(m.out, format+"\n", args...)
}

// sharedRuntime starts, once, the runtime the reconciler rows share.
func (m *matrix) sharedRuntime(ctx context.Context) (*inrunProc, error) {
	if m.shared != nil {
		if !m.shared.alive() {
			return nil, m.shared.exitError()
		}
		return m.shared, nil
	}
	p, err := m.startInrun("shared", m.bpPath)
	if err != nil {
		return nil, err
	}
	if err := p.waitWorking(ctx, 2*time.Minute); err != nil {
		p.stop()
		return nil, err
	}
	m.shared = p
	return p, nil
}

// stopShared stops the shared runtime, so that a row's own runtimes are
// the only ones.
func (m *matrix) stopShared() {
	if m.shared != nil {
		m.shared.stop()
		m.shared = nil
	}
}

// namespace creates the namespace of a row, and returns what deletes what
// the row made in it: call it at the row's end, while its runtime still
// runs to finalize the Widgets, and defer it too, for the rows that stop
// early. It runs once, and records its failure on r.
func (m *matrix) namespace(ctx context.Context, r *Row, id string) (string, func(), error) {
	ns := namespacePrefix + id
	if err := m.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", func() {}, err
	}
	var once sync.Once
	return ns, func() {
		once.Do(func() {
			if err := m.clean(ctx, ns); err != nil {
				r.fail("cleaning up: %v", err)
			}
		})
	}, nil
}

// clean deletes the Widgets of namespace, then the objects left in it: the
// control plane runs no garbage collector, and the next row's runtime must
// find nothing of this one's. A running runtime finalizes the Widgets;
// when none does, their finalizers are taken off.
func (m *matrix) clean(ctx context.Context, ns string) error {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	if err := m.c.DeleteAllOf(ctx, w, client.InNamespace(ns)); err != nil {
		return err
	}
	gone := func() (bool, string) {
		ws, err := m.listWidgets(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		return len(ws) == 0, fmt.Sprintf("%d Widgets left", len(ws))
	}
	if poll(ctx, 30*time.Second, gone) != nil {
		ws, err := m.listWidgets(ctx, ns)
		if err != nil {
			return err
		}
		for i := range ws {
			raw := client.RawPatch(types.MergePatchType, []byte(`{"metadata": {"finalizers": null}}`))
			if err := m.c.Patch(ctx, &ws[i], raw); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := poll(ctx, 30*time.Second, gone); err != nil {
			return fmt.Errorf("deleting the Widgets of %s: %w", ns, err)
		}
	}
	if err := m.c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
		return err
	}
	return m.c.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(ns))
}

var widgetGVK = widgetGVR.GroupVersion().WithKind("Widget")

// createWidget creates a Widget with spec.
func (m *matrix) createWidget(ctx context.Context, ns, name string, spec map[string]any) error {
	w := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(ns)
	w.SetName(name)
	return m.c.Create(ctx, w)
}

// createWidgets creates n Widgets w-000 … with four clients at once.
func (m *matrix) createWidgets(ctx context.Context, ns string, n int) error {
	names := make(chan string)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for name := range names {
				if err := m.createWidget(ctx, ns, name, map[string]any{"size": "small"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(names)
		for i := range n {
			select {
			case names <- widgetName(i):
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}

func widgetName(i int) string { return fmt.Sprintf("w-%03d", i) }

// patchWidget merges patch into a Widget.
func (m *matrix) patchWidget(ctx context.Context, ns, name string, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(ns)
	w.SetName(name)
	return m.c.Patch(ctx, w, client.RawPatch(types.MergePatchType, raw))
}

func (m *matrix) getWidget(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w)
	return w, err
}

func (m *matrix) listWidgets(ctx context.Context, ns string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
	if err := m.c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// condition returns the status and message of a Widget's condition, and
// whether it speaks of the Widget's current generation.
func condition(w *unstructured.Unstructured, condType string) (status, message string, current bool) {
	gen, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["type"] != condType {
			continue
		}
		s, _ := cm["status"].(string)
		msg, _ := cm["message"].(string)
		return s, msg, gen == w.GetGeneration()
	}
	return "", "", false
}

// converged reports whether a Widget says it is Ready, and not Degraded,
// for its current generation.
func converged(w *unstructured.Unstructured) bool {
	ready, _, current := condition(w, reconciler.ConditionReady)
	degraded, _, _ := condition(w, reconciler.ConditionDegraded)
	return current && ready == "True" && degraded == "False"
}

// waitConverged waits until the Widget is Ready for its generation.
func (m *matrix) waitConverged(ctx context.Context, ns, name string, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string) {
		w, err := m.getWidget(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		if converged(w) {
			return true, ""
		}
		s, msg, _ := condition(w, reconciler.ConditionReady)
		d, dmsg, _ := condition(w, reconciler.ConditionDegraded)
		return false, fmt.Sprintf("Ready=%s (%s), Degraded=%s (%s)", s, msg, d, dmsg)
	})
}

// waitAllConverged waits until every Widget of ns is Ready, and n exist.
func (m *matrix) waitAllConverged(ctx context.Context, ns string, n int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string) {
		ws, err := m.listWidgets(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range ws {
			if converged(&ws[i]) {
				ready++
			}
		}
		return ready == n && len(ws) == n, fmt.Sprintf("%d of %d Widgets Ready", ready, n)
	})
}

// countConverged counts the Ready Widgets of ns.
func (m *matrix) countConverged(ctx context.Context, ns string) (int, error) {
	ws, err := m.listWidgets(ctx, ns)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range ws {
		if converged(&ws[i]) {
			n++
		}
	}
	return n, nil
}

// waitDegraded waits until the Widget is Degraded with a message holding
// every one of want, and returns the message.
func (m *matrix) waitDegraded(ctx context.Context, ns, name string, want []string, timeout time.Duration) (string, error) {
	var got string
	err := poll(ctx, timeout, func() (bool, string) {
		w, err := m.getWidget(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		s, msg, _ := condition(w, reconciler.ConditionDegraded)
		got = msg
		if s != "True" {
			return false, "Degraded=" + s + " " + msg
		}
		for _, x := range want {
			if !strings.Contains(msg, x) {
				return false, fmt.Sprintf("Degraded says %q, without %q", msg, x)
			}
		}
		return true, ""
	})
	return got, err
}

// warningEvent waits for a Warning Event on the Widget with reason whose
// note holds every one of want, and returns the note.
func (m *matrix) warningEvent(ctx context.Context, ns, name, reason string, want []string, timeout time.Duration) (string, error) {
	var note string
	err := poll(ctx, timeout, func() (bool, string) {
		events := &eventsv1.EventList{}
		if err := m.c.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type != corev1.EventTypeWarning || e.Regarding.Name != name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason != reason || !containsAll(e.Note, want) {
				continue
			}
			note = e.Note
			return true, ""
		}
		return false, fmt.Sprintf("no Warning %s Event holding %q; the Warning Events: %q", reason, want, seen)
	})
	return note, err
}

func containsAll(s string, want []string) bool {
	for _, x := range want {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// poll calls cond every 100ms until it holds or timeout passes; the error
// then carries cond's last word on what is missing.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// foreign are objects a person made in a row's namespace, which Inrun must
// never touch: one plain, one the reconciler tries to take, and one that
// carries Inrun's inventory labels for a custom resource that does not
// exist.
type foreign struct {
	objs []client.Object
	rv   map[types.UID]string
}

// makeForeign creates the foreign objects of ns.
func (m *matrix) makeForeign(ctx context.Context, ns string) (*foreign, error) {
	f := &foreign{rv: map[types.UID]string{}}
	f.objs = []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "notes", Namespace: ns}, Data: map[string]string{"owner": "a person"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: preciousName, Namespace: ns}, Data: map[string][]byte{"password": []byte("original")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "lookalike", Namespace: ns,
			Labels: map[string]string{
				reconciler.LabelManagedBy: reconciler.ManagedBy, reconciler.LabelBlueprint: "widget",
				reconciler.LabelOwnerUID: "00000000-0000-0000-0000-000000000000", reconciler.LabelChild: "share",
			},
			Annotations: map[string]string{reconciler.AnnotationOwner: widgetGVK.Group + "/Widget/" + ns + "/ghost"},
		}, Data: map[string]string{"share": "not Inrun's"}},
	}
	for _, o := range f.objs {
		if err := m.c.Create(ctx, o); err != nil {
			return nil, err
		}
		f.rv[o.GetUID()] = o.GetResourceVersion()
	}
	return f, nil
}

// preciousName is the foreign Secret the takeover row's reconciler claims.
const preciousName = "precious"

// check reports every foreign object that is gone, replaced or changed.
func (f *foreign) check(ctx context.Context, c client.Client) []string {
	var problems []string
	for _, o := range f.objs {
		live := o.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1.")
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("the foreign %s %s was deleted", kind, o.GetName()))
		case err != nil:
			problems = append(problems, err.Error())
		case live.GetUID() != o.GetUID():
			problems = append(problems, fmt.Sprintf("the foreign %s %s was replaced", kind, o.GetName()))
		case live.GetResourceVersion() != f.rv[o.GetUID()]:
			problems = append(problems, fmt.Sprintf("the foreign %s %s was written (labels %v)", kind, o.GetName(), live.GetLabels()))
		}
	}
	return problems
}

// childUIDs lists the children of a Widget, by "namespace/name (id)", from
// the API server.
func (m *matrix) childUIDs(ctx context.Context, w *unstructured.Unstructured) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	sel := client.MatchingLabels{reconciler.LabelOwnerUID: string(w.GetUID())}
	cms := &corev1.ConfigMapList{}
	if err := m.c.List(ctx, cms, client.InNamespace(w.GetNamespace()), sel); err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		out[cm.Namespace+"/"+cm.Name+" ("+cm.Labels[reconciler.LabelChild]+")"] = cm.UID
	}
	secrets := &corev1.SecretList{}
	if err := m.c.List(ctx, secrets, client.InNamespace(w.GetNamespace()), sel); err != nil {
		return nil, err
	}
	for _, s := range secrets.Items {
		out[s.Namespace+"/"+s.Name+" ("+s.Labels[reconciler.LabelChild]+")"] = s.UID
	}
	return out, nil
}

// wantChildren is how many children a converged Widget has: its share and
// the reconciler's two ConfigMaps.
const wantChildren = 3

// compareChildren reports children of before that are gone or were
// replaced in after.
func compareChildren(before, after map[string]types.UID) []string {
	var problems []string
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch uid, ok := after[k]; {
		case !ok:
			problems = append(problems, "child "+k+" is gone")
		case uid != before[k]:
			problems = append(problems, "child "+k+" was replaced by a new object")
		}
	}
	return problems
}

func uidsOf(m map[string]types.UID) []types.UID {
	out := make([]types.UID, 0, len(m))
	for _, uid := range m {
		out = append(out, uid)
	}
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

// errRow marks a row that could not run to its end; its Problems say why.
var errRow = errors.New("the row did not run to its end")
