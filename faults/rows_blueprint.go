package main

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// configMapRow runs the Blueprint from a ConfigMap, breaks it while it
// runs, edits a Widget, then fixes the Blueprint.
func (m *matrix) configMapRow(ctx context.Context, r *Row) error {
	m.stopShared()
	ns, cleanup, err := m.namespace(ctx, r, "configmap")
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-blueprint", Namespace: ns, Labels: load.ConfigMapSelector()},
		Data:       map[string]string{load.KeyBlueprint: m.bpSource, "crd.yaml": crdYAML},
	}
	if err := m.c.Create(ctx, cm); err != nil {
		return err
	}
	p, err := m.startInrun("configmap", "--from-configmaps", "--configmap-namespace="+ns)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.waitWorking(ctx, 2*time.Minute); err != nil {
		return err
	}
	const name = "widget"
	if err := m.createWidget(ctx, ns, name, map[string]any{"total": int64(100), "parts": int64(1)}); err != nil {
		return err
	}
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		return err
	}
	w, err := m.getWidget(ctx, ns, name)
	if err != nil {
		return err
	}
	before, err := m.childUIDs(ctx, w)
	if err != nil {
		return err
	}
	start := time.Now()

	// Broken: an unknown field in an expression.
	cm.Data[load.KeyBlueprint] = strings.Replace(m.bpSource, "self.spec.total", "self.spec.totl", 1)
	if err := m.c.Update(ctx, cm); err != nil {
		return err
	}
	note, err := m.warningEvent(ctx, ns, cm.Name, runner.ReasonBlueprintInvalid, []string{"self.spec.totl", "last good Blueprint"}, time.Minute)
	r.message("event", note)
	if err != nil {
		r.fail("the broken edit: %v", err)
		return errRow
	}
	r.saw("Warning %s Event on the ConfigMap", runner.ReasonBlueprintInvalid)
	if err := m.patchWidget(ctx, ns, name, map[string]any{"spec": map[string]any{"total": int64(200)}}); err != nil {
		return err
	}
	if err := m.waitShare(ctx, ns, name, "200"); err != nil {
		r.fail("the last good Blueprint did not reconcile an edit: %v", err)
		return errRow
	}
	r.saw("an edit of the Widget reconciled by the last good Blueprint")

	// Fixed, with a change: the controllers restart in-process, and
	// rewrite nothing that has converged. The count starts once the
	// edit's own writes are done: the share's status write lands just
	// after the share.
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		return err
	}
	st0, err := settle(ctx, p, 3*time.Second, time.Minute)
	if err != nil {
		return err
	}
	starts := p.starts.Load()
	cm.Data[load.KeyBlueprint] = m.bpSource + "# fixed\n"
	if err := m.c.Update(ctx, cm); err != nil {
		return err
	}
	if err := poll(ctx, time.Minute, func() (bool, string) {
		return p.starts.Load() > starts, "the controllers did not restart on the fixed Blueprint"
	}); err != nil {
		r.fail("%v", err)
		return errRow
	}
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		r.fail("after the fix: %v", err)
		return errRow
	}
	st, err := settle(ctx, p, 3*time.Second, time.Minute)
	if err != nil {
		return err
	}
	writes := st.sub(st0)
	r.figure("writesAfterFix", float64(writes.objectWrites()))
	if writes.objectWrites() > 0 {
		r.fail("the fixed Blueprint's controllers rewrote converged objects: %s", describeWrites(writes.writes))
	} else {
		r.saw("the fixed Blueprint runs, rewriting nothing")
	}
	m.checkKept(ctx, r, ns, name, before, start)
	r.failAll(fo.check(ctx, m.c))
	if !p.alive() {
		r.fail("the runtime exited: %v", p.exitError())
	}
	cleanup()
	return nil
}

// waitShare waits until the Widget's share child holds want.
func (m *matrix) waitShare(ctx context.Context, ns, name, want string) error {
	return poll(ctx, time.Minute, func() (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-share"}, cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["share"] == want, "share is " + cm.Data["share"] + ", want " + want
	})
}

// invalidRow edits a Widget so that an expression fails (a division by
// zero), then fixes it.
func (m *matrix) invalidRow(ctx context.Context, r *Row) error {
	p, err := m.sharedRuntime(ctx)
	if err != nil {
		return err
	}
	ns, cleanup, err := m.namespace(ctx, r, "invalid")
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	const name = "widget"
	if err := m.createWidget(ctx, ns, name, map[string]any{"total": int64(100), "parts": int64(1)}); err != nil {
		return err
	}
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		return err
	}
	w, err := m.getWidget(ctx, ns, name)
	if err != nil {
		return err
	}
	before, err := m.childUIDs(ctx, w)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := m.patchWidget(ctx, ns, name, map[string]any{"spec": map[string]any{"parts": int64(0)}}); err != nil {
		return err
	}
	want := []string{`child "share"`, "division by zero"}
	msg, err := m.waitDegraded(ctx, ns, name, want, time.Minute)
	r.message("degraded", msg)
	if err != nil {
		r.fail("Degraded: %v", err)
		return errRow
	}
	degradedAt := time.Now()
	r.saw("Degraded in %s", round(degradedAt.Sub(start)))
	note, err := m.warningEvent(ctx, ns, name, "ChildFailed", want, 30*time.Second)
	r.message("event", note)
	if err != nil {
		r.fail("Event: %v", err)
	} else {
		r.saw("Warning ChildFailed Event")
	}
	s0, err := p.stats(ctx)
	if err != nil {
		return err
	}
	time.Sleep(m.opts.window - time.Since(degradedAt))
	s1, err := p.stats(ctx)
	if err != nil {
		return err
	}
	reconciles := int(s1.reconciles - s0.reconciles)
	bound := retryBound(m.opts.window, m.opts.maxBackoff)
	r.figure("reconcilesInWindow", float64(reconciles))
	r.figure("reconcileBound", float64(bound))
	r.saw("%d reconciles in %s (bound %d)", reconciles, round(m.opts.window), bound)
	if reconciles > bound {
		r.fail("%d reconciles in %s, more than the backoff allows (%d)", reconciles, m.opts.window, bound)
	}
	if err := m.waitShare(ctx, ns, name, "100"); err != nil {
		r.fail("the share was not kept as it was: %v", err)
	}
	if n := m.track.changedSince(uidsOf(before), start); n > 0 {
		r.fail("the children were written %d times while the expression failed", n)
	}
	if err := m.patchWidget(ctx, ns, name, map[string]any{"spec": map[string]any{"parts": int64(4)}}); err != nil {
		return err
	}
	fixedAt := time.Now()
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		r.fail("after the fix: %v", err)
		return errRow
	}
	if err := m.waitShare(ctx, ns, name, "25"); err != nil {
		r.fail("after the fix: %v", err)
	}
	r.saw("fixed: Ready and the share rewritten %s later", round(time.Since(fixedAt)))
	m.checkKept(ctx, r, ns, name, before, start)
	r.failAll(fo.check(ctx, m.c))
	return nil
}
