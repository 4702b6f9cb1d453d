package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/controller"
)

// ConfigMaps finds Blueprints stored in ConfigMaps. The runner never
// compiles: Load, given by the program that runs it, turns a ConfigMap
// into IR (inrun run passes load.ConfigMap followed by the compiler).
type ConfigMaps struct {
	// Namespace to look in; "" for every namespace.
	Namespace string
	// Selector selects the ConfigMaps by label.
	Selector map[string]string
	// Load turns one ConfigMap into a Blueprint.
	Load func(*corev1.ConfigMap) (*ir.Blueprint, error)
}

// Blueprints loads every selected ConfigMap, in namespace/name order. It
// returns the Blueprints that load, and an error joining the problems of
// every one that does not.
func (s ConfigMaps) Blueprints(ctx context.Context, r client.Reader) ([]*ir.Blueprint, error) {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Selector)); err != nil {
		return nil, fmt.Errorf("listing Blueprint ConfigMaps: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	var bps []*ir.Blueprint
	var errs []error
	for i := range list.Items {
		bp, err := s.Load(&list.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bps = append(bps, bp)
	}
	return bps, errors.Join(errs...)
}

// ReasonBlueprintInvalid is the reason of the Warning Event recorded on a
// Blueprint ConfigMap that does not compile.
const ReasonBlueprintInvalid = "BlueprintInvalid"

// loaded is the last good Blueprint of one ConfigMap, and the version of
// the ConfigMap last read.
type loaded struct {
	bp *ir.Blueprint
	// version is the resourceVersion last read, good or not.
	version string
}

// watchConfigMaps runs the Blueprints opts.ConfigMaps finds, and follows
// the ConfigMaps: an edit that compiles replaces its Blueprint, and the
// runtime restarts its manager in-process to run it; an edit that does
// not is reported (a Warning Event on the ConfigMap, and the log), and the
// last good Blueprint of that ConfigMap keeps running.
func watchConfigMaps(ctx context.Context, opts Options) error {
	src := opts.ConfigMaps
	if opts.LeaderElectionID == "" {
		// One Lease whatever Blueprints the ConfigMaps hold at the moment:
		// replicas that see an edit at different times must not lead two
		// Leases at once.
		opts.LeaderElectionID = "inrun-configmaps"
		if src.Namespace != "" {
			opts.LeaderElectionID += "-" + src.Namespace
		}
	}
	cacheOpts := cache.Options{
		Scheme: Scheme(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(src.Selector)},
		},
	}
	if src.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{src.Namespace: {}}
	}
	cms, err := cache.New(opts.Config, cacheOpts)
	if err != nil {
		return err
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inf, err := cms.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching Blueprint ConfigMaps: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { _ = cms.Start(watchCtx) }()
	if !cms.WaitForCacheSync(ctx) {
		return fmt.Errorf("watching Blueprint ConfigMaps: the cache did not sync: %w", context.Cause(ctx))
	}
	c, err := client.New(opts.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	recorder := controller.NewClientRecorder(c, Scheme(), "inrun", opts.Log)
	go func() { _ = recorder.Start(watchCtx) }()

	// Ready means the first controllers run; restarts do not call it again.
	var once sync.Once
	ready := func() {
		if opts.Ready != nil {
			once.Do(opts.Ready)
		}
	}
	w := &cmWatch{src: src, log: opts.Log.WithName("blueprints"), recorder: recorder, loaded: map[types.NamespacedName]loaded{}}
	var running []*ir.Blueprint
	started := false // running holds what runs: nothing, at first, is a state too
	var stop context.CancelFunc
	var done chan error
	// Without a Blueprint there is no manager, whose probes are: these
	// answer meanwhile, so that a liveness probe does not restart a
	// runtime that waits, as it should, for its first ConfigMap.
	stopProbes := func() {}
	defer func() {
		stopProbes()
		if stop != nil {
			stop()
			<-done
		}
	}()
	for {
		bps, err := w.reload(ctx, cms)
		if err != nil {
			return err
		}
		if !started || !sameBlueprints(bps, running) {
			started = true
			if stop != nil {
				w.log.Info("restarting the controllers on a changed set of Blueprints")
				stop()
				// What a manager says as it is stopped ("leader election
				// lost", as it was waiting for the Lease) is no reason to
				// stop the runtime; and done is read once (the deferred
				// wait would block for ever).
				if err := <-done; err != nil {
					w.log.Info("the stopped controllers' manager said", "error", err.Error())
				}
				stop = nil
			}
			running = bps
			if len(bps) == 0 {
				w.log.Info("no Blueprint to run; waiting for a ConfigMap labelled " + labels.SelectorFromSet(src.Selector).String())
				stopProbes = serveProbes(opts.ProbeAddr, w.log)
			} else {
				stopProbes()
				stopProbes = func() {}
				o := opts
				o.ConfigMaps, o.Blueprints, o.Ready = nil, bps, ready
				// A changed Blueprint's controllers replace the old ones,
				// stopped above, under the same names: controller-runtime
				// would take them for duplicates and refuse to start.
				o.SkipNameValidation = true
				mctx, cancel := context.WithCancel(ctx)
				stop, done = cancel, make(chan error, 1)
				go func() { done <- run(mctx, o) }()
			}
		}
		var managerDone chan error
		if stop != nil {
			managerDone = done
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-managerDone:
			stop = nil
			if err == nil {
				err = errors.New("the manager stopped")
			}
			return err
		case <-changed:
		}
	}
}

// cmWatch is what watchConfigMaps knows of the ConfigMaps.
type cmWatch struct {
	src      *ConfigMaps
	log      logr.Logger
	recorder *controller.Recorder
	loaded   map[types.NamespacedName]loaded
}

// reload reads every selected ConfigMap whose version changed, and returns
// the Blueprints to run: each ConfigMap's last good one, in namespace/name
// order.
func (w *cmWatch) reload(ctx context.Context, r client.Reader) ([]*ir.Blueprint, error) {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.InNamespace(w.src.Namespace), client.MatchingLabels(w.src.Selector)); err != nil {
		return nil, fmt.Errorf("listing Blueprint ConfigMaps: %w", err)
	}
	present := map[types.NamespacedName]bool{}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		present[key] = true
		prev := w.loaded[key]
		if prev.version == cm.ResourceVersion {
			continue
		}
		bp, err := w.src.Load(cm)
		if err != nil {
			w.loaded[key] = loaded{bp: prev.bp, version: cm.ResourceVersion}
			keeps := "nothing of it runs"
			if prev.bp != nil {
				keeps = "the last good Blueprint of it keeps running"
			}
			w.log.Error(err, "a Blueprint ConfigMap does not compile; "+keeps, "configmap", key.String())
			w.recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonBlueprintInvalid, "Load", "%s; %s", strings.ReplaceAll(err.Error(), "\n", "; "), keeps)
			continue
		}
		if prev.bp != nil {
			w.log.Info("a Blueprint ConfigMap changed", "configmap", key.String(), "blueprint", bp.Name)
		}
		w.loaded[key] = loaded{bp: bp, version: cm.ResourceVersion}
	}
	for key := range w.loaded {
		if !present[key] {
			w.log.Info("a Blueprint ConfigMap is gone; its Blueprint stops", "configmap", key.String())
			delete(w.loaded, key)
		}
	}
	keys := make([]types.NamespacedName, 0, len(w.loaded))
	for k := range w.loaded {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	var out []*ir.Blueprint
	for _, k := range keys {
		if bp := w.loaded[k].bp; bp != nil {
			out = append(out, bp)
		}
	}
	return out, nil
}

// sameBlueprints reports whether a and b are the very same Blueprints.
func sameBlueprints(a, b []*ir.Blueprint) bool {
	return slices.Equal(a, b)
}

// serveProbes answers /healthz and /readyz on addr (none for "" or "0")
// until the function it returns is called.
func serveProbes(addr string, log logr.Logger) func() {
	if addr == "" || addr == "0" {
		return func() {}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux := http.NewServeMux()
	mux.Handle("/healthz", ok)
	mux.Handle("/readyz", ok)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error(err, "serving the probes while no Blueprint runs")
		return func() {}
	}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
