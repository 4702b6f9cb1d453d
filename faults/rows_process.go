package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// snapshot is the state of a namespace's Widgets at one moment, and what
// is left to write to converge them.
type snapshot struct {
	// children are the UIDs of every child, by "namespace/name (id)".
	children map[string]types.UID
	// done are the resourceVersions of the Widgets converged then, and of
	// their children, by UID: nothing may write them again.
	done map[types.UID]string
	// converged counts the Widgets Ready then.
	converged int
	// needed counts the writes left to converge every Widget: a finalizer,
	// each missing child, the status.
	needed int64
}

// snapshotOf reads the Widgets and children of ns.
func (m *matrix) snapshotOf(ctx context.Context, ns string) (*snapshot, error) {
	ws, err := m.listWidgets(ctx, ns)
	if err != nil {
		return nil, err
	}
	cms := &corev1.ConfigMapList{}
	if err := m.c.List(ctx, cms, client.InNamespace(ns), client.MatchingLabels{reconciler.LabelManagedBy: reconciler.ManagedBy}); err != nil {
		return nil, err
	}
	byOwner := map[string][]corev1.ConfigMap{}
	for _, cm := range cms.Items {
		byOwner[cm.Labels[reconciler.LabelOwnerUID]] = append(byOwner[cm.Labels[reconciler.LabelOwnerUID]], cm)
	}
	s := &snapshot{children: map[string]types.UID{}, done: map[types.UID]string{}}
	for i := range ws {
		w := &ws[i]
		kids := byOwner[string(w.GetUID())]
		for _, cm := range kids {
			s.children[cm.Namespace+"/"+cm.Name+" ("+cm.Labels[reconciler.LabelChild]+")"] = cm.UID
		}
		if !controllerutil.ContainsFinalizer(w, reconciler.Finalizer) {
			s.needed++
		}
		s.needed += int64(max(0, wantChildren-len(kids)))
		if converged(w) && len(kids) == wantChildren {
			s.converged++
			s.done[w.GetUID()] = w.GetResourceVersion()
			for _, cm := range kids {
				s.done[cm.UID] = cm.ResourceVersion
			}
		} else {
			s.needed++
		}
	}
	return s, nil
}

// settle waits until p has written nothing and reconciled nothing for
// quiet, and returns its figures then.
func settle(ctx context.Context, p *inrunProc, quiet, timeout time.Duration) (stats, error) {
	last, err := p.stats(ctx)
	if err != nil {
		return stats{}, err
	}
	since := time.Now()
	deadline := since.Add(timeout)
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			return last, fmt.Errorf("the runtime did not settle within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return last, context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
		st, err := p.stats(ctx)
		if err != nil {
			return last, err
		}
		if st.reconciles != last.reconciles || st.objectWrites() != last.objectWrites() {
			since = time.Now()
		}
		last = st
	}
	return last, nil
}

// checkConvergedOnce checks, after a restart or a failover, that every
// Widget of ns has its children, that every child that existed before
// (in snap) is the same object, that nothing converged then was written
// since, and that nothing was deleted or created twice.
func (m *matrix) checkConvergedOnce(ctx context.Context, r *Row, ns string, snap *snapshot) {
	ws, err := m.listWidgets(ctx, ns)
	if err != nil {
		r.fail("%v", err)
		return
	}
	cms := &corev1.ConfigMapList{}
	if err := m.c.List(ctx, cms, client.InNamespace(ns)); err != nil {
		r.fail("%v", err)
		return
	}
	rewritten := 0
	for i := range ws {
		if rv, ok := snap.done[ws[i].GetUID()]; ok && rv != ws[i].GetResourceVersion() {
			rewritten++
		}
	}
	for _, cm := range cms.Items {
		if rv, ok := snap.done[cm.UID]; ok && rv != cm.ResourceVersion {
			rewritten++
		}
	}
	all := map[string]types.UID{}
	for i := range ws {
		kids, err := m.childUIDs(ctx, &ws[i])
		if err != nil {
			r.fail("%v", err)
			return
		}
		if len(kids) != wantChildren {
			r.fail("Widget %s has %d children, want %d", ws[i].GetName(), len(kids), wantChildren)
		}
		for k, v := range kids {
			all[k] = v
		}
	}
	problems := compareChildren(snap.children, all)
	problems = append(problems, prefixed("deleted: ", m.track.deletedIn(ns, time.Time{}))...)
	problems = append(problems, prefixed("created twice: ", m.track.recreated(ns))...)
	if rewritten > 0 {
		problems = append(problems, fmt.Sprintf("%d Widgets or children that had converged before were written again", rewritten))
	}
	r.failAll(problems)
	if len(problems) == 0 {
		r.saw("%d children: the %d made before kept (same UIDs), none deleted or made twice; the %d Widgets Ready before not written again",
			len(all), len(snap.children), snap.converged)
	}
}

// killRow kills `inrun run` with SIGKILL while it converges Widgets, and
// starts another.
func (m *matrix) killRow(ctx context.Context, r *Row) error {
	m.stopShared()
	ns, cleanup, err := m.namespace(ctx, r, "kill")
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	n := m.opts.n
	if err := m.createWidgets(ctx, ns, n); err != nil {
		return err
	}
	first, err := m.startInrun("kill-first", m.bpPath)
	if err != nil {
		return err
	}
	defer first.stop()
	if err := first.waitWorking(ctx, 2*time.Minute); err != nil {
		return err
	}
	if err := waitSome(ctx, m, ns, n/3, first); err != nil {
		return err
	}
	first.kill()
	// Let the API server finish what the dead process had sent.
	time.Sleep(time.Second)
	snap, err := m.snapshotOf(ctx, ns)
	if err != nil {
		return err
	}
	r.figure("convergedAtKill", float64(snap.converged))
	r.figure("childrenAtKill", float64(len(snap.children)))
	r.saw("killed with %d of %d Widgets Ready, %d children made", snap.converged, n, len(snap.children))

	second, err := m.startInrun("kill-second", m.bpPath)
	if err != nil {
		return err
	}
	defer second.stop()
	restartedAt := time.Now()
	if err := second.waitWorking(ctx, 2*time.Minute); err != nil {
		return err
	}
	if err := m.waitAllConverged(ctx, ns, n, 5*time.Minute); err != nil {
		r.fail("after the restart: %v", err)
		return errRow
	}
	r.figure("convergedSecondsAfterRestart", time.Since(restartedAt).Seconds())
	r.saw("all Ready %s after the restart", round(time.Since(restartedAt)))
	st, err := settle(ctx, second, 3*time.Second, 2*time.Minute)
	if err != nil {
		return err
	}
	m.checkWrites(r, second, st, snap.needed)
	r.figure("widgetChanges", float64(m.track.changesOf(ns, widgetGVR.Resource, restartedAt)))
	m.checkConvergedOnce(ctx, r, ns, snap)
	r.failAll(fo.check(ctx, m.c))
	cleanup()
	return nil
}

// checkWrites compares the writes of p, whose figures are st, with what
// convergence needed. Too many, it names the objects p's log shows written
// more than once, so that a failure says where to look.
func (m *matrix) checkWrites(r *Row, p *inrunProc, st stats, needed int64) {
	made := st.objectWrites()
	r.figure("writes", float64(made))
	r.figure("writesNeeded", float64(needed))
	r.figure("events", float64(st.eventWrites()))
	r.saw("%d writes where %d were needed (%s)", made, needed, describeWrites(st.writes))
	if made > needed {
		r.fail("the runtime wrote %d times (%s); converging needed %d writes; written more than once, by %s: %s",
			made, describeWrites(st.writes), needed, p.logPath, strings.Join(repeatedWrites(p.logPath), "; "))
	}
}

// waitSome waits until at least k Widgets of ns are Ready.
func waitSome(ctx context.Context, m *matrix, ns string, k int, p *inrunProc) error {
	return poll(ctx, 5*time.Minute, func() (bool, string) {
		if !p.alive() {
			return false, p.exitError().Error()
		}
		n, err := m.countConverged(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		return n >= k, fmt.Sprintf("%d of %d Widgets Ready", n, k)
	})
}

// apiServerRow stops kube-apiserver under a running runtime, starts it
// again, and edits and creates Widgets.
func (m *matrix) apiServerRow(ctx context.Context, r *Row) error {
	m.stopShared()
	ns, cleanup, err := m.namespace(ctx, r, "apiserver")
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	p, err := m.startInrun("apiserver", m.bpPath)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.waitWorking(ctx, 2*time.Minute); err != nil {
		return err
	}
	k := max(4, m.opts.n/6)
	if err := m.createWidgets(ctx, ns, k); err != nil {
		return err
	}
	if err := m.waitAllConverged(ctx, ns, k, 3*time.Minute); err != nil {
		return err
	}
	snap, err := m.snapshotOf(ctx, ns)
	if err != nil {
		return err
	}
	pid := p.cmd.Process.Pid

	stopping := time.Now()
	if err := m.cluster.StopAPIServer(); err != nil {
		return err
	}
	stoppedAt := time.Now()
	r.figure("stopSeconds", stoppedAt.Sub(stopping).Seconds())
	started := false
	defer func() {
		if !started {
			if err := m.cluster.StartAPIServer(ctx); err != nil {
				r.fail("starting the API server again: %v", err)
			}
		}
	}()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(m.opts.apiDown):
	}
	if !p.alive() {
		r.fail("the runtime exited while the API server was down: %v", p.exitError())
	}
	started = true
	if err := m.cluster.StartAPIServer(ctx); err != nil {
		return err
	}
	upAt := time.Now()
	r.figure("downSeconds", upAt.Sub(stoppedAt).Seconds())
	r.saw("kube-apiserver gone %s after SIGTERM, serving again %s later", round(stoppedAt.Sub(stopping)), round(upAt.Sub(stoppedAt)))
	before, err := p.stats(ctx)
	if err != nil {
		r.fail("the runtime after the API server came back: %v", err)
		return errRow
	}

	// Half the Widgets edited, and new ones: the runtime must see both.
	edited := k / 2
	for i := range edited {
		if err := m.patchWidget(ctx, ns, widgetName(i), map[string]any{"spec": map[string]any{"size": "large"}}); err != nil {
			return err
		}
	}
	added := max(2, k/5)
	for i := range added {
		if err := m.createWidget(ctx, ns, widgetName(500+i), map[string]any{"size": "small"}); err != nil {
			return err
		}
	}
	if err := m.waitAllConverged(ctx, ns, k+added, 3*time.Minute); err != nil {
		r.fail("after the API server came back: %v", err)
		return errRow
	}
	r.figure("convergedSecondsAfterStart", time.Since(upAt).Seconds())
	r.saw("%d edits and %d new Widgets Ready %s after it came back", edited, added, round(time.Since(upAt)))
	st, err := settle(ctx, p, 3*time.Second, 2*time.Minute)
	if err != nil {
		return err
	}
	// An edit writes both ConfigMaps of the reconciler and the status; a
	// new Widget its finalizer, three children and its status.
	m.checkWrites(r, p, st.sub(before), int64(edited*3+added*5))
	if !p.alive() || p.cmd.Process.Pid != pid {
		r.fail("the runtime did not survive")
	} else {
		r.saw("the same process, never restarted")
	}
	// The Widgets left alone must not have been written again.
	var untouched []types.UID
	for i := edited; i < k; i++ {
		w, err := m.getWidget(ctx, ns, widgetName(i))
		if err != nil {
			return err
		}
		untouched = append(untouched, w.GetUID())
		kids, err := m.childUIDs(ctx, w)
		if err != nil {
			return err
		}
		untouched = append(untouched, uidsOf(kids)...)
	}
	if n := m.track.changedSince(untouched, upAt); n > 0 {
		r.fail("%d writes to Widgets or children that were neither edited nor new", n)
	}
	problems := compareChildren(snap.children, m.allChildren(ctx, r, ns))
	problems = append(problems, prefixed("deleted: ", m.track.deletedIn(ns, time.Time{}))...)
	problems = append(problems, prefixed("created twice: ", m.track.recreated(ns))...)
	r.failAll(problems)
	if len(problems) == 0 {
		r.saw("the %d children made before kept, none deleted", len(snap.children))
	}
	r.failAll(fo.check(ctx, m.c))
	cleanup()
	return nil
}

// allChildren lists the children of every Widget of ns.
func (m *matrix) allChildren(ctx context.Context, r *Row, ns string) map[string]types.UID {
	all := map[string]types.UID{}
	ws, err := m.listWidgets(ctx, ns)
	if err != nil {
		r.fail("%v", err)
		return all
	}
	for i := range ws {
		kids, err := m.childUIDs(ctx, &ws[i])
		if err != nil {
			r.fail("%v", err)
			return all
		}
		for k, v := range kids {
			all[k] = v
		}
	}
	return all
}

// leaderRow runs two runtimes with --leader-elect, kills the leader with
// SIGKILL while it converges Widgets, and waits for the other to lead.
func (m *matrix) leaderRow(ctx context.Context, r *Row) error {
	m.stopShared()
	ns, cleanup, err := m.namespace(ctx, r, "leader")
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	args := []string{"--leader-elect", "--leader-election-namespace=" + ns, m.bpPath}
	first, err := m.startInrun("leader-first", args...)
	if err != nil {
		return err
	}
	defer first.stop()
	if err := first.waitWorking(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("the first runtime did not lead: %w", err)
	}
	second, err := m.startInrun("leader-second", args...)
	if err != nil {
		return err
	}
	defer second.stop()
	if err := second.waitServing(ctx, 2*time.Minute); err != nil {
		return err
	}
	n := m.opts.n
	if err := m.createWidgets(ctx, ns, n); err != nil {
		return err
	}
	if err := waitSome(ctx, m, ns, n/3, first); err != nil {
		return err
	}
	if st, err := second.stats(ctx); err != nil {
		return err
	} else if st.leader || st.objectWrites() > 0 {
		r.fail("the second runtime led (%v) or wrote (%s) while the first led", st.leader, describeWrites(st.writes))
	}
	first.kill()
	killedAt := time.Now()
	time.Sleep(time.Second)
	snap, err := m.snapshotOf(ctx, ns)
	if err != nil {
		return err
	}
	r.saw("leader killed with %d of %d Widgets Ready", snap.converged, n)
	r.figure("convergedAtKill", float64(snap.converged))

	lease := &coordinationv1.Lease{}
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inrun-widget"}, lease); err != nil {
		return fmt.Errorf("the leader-election Lease: %w", err)
	}
	leaseDuration := 15 * time.Second
	if d := lease.Spec.LeaseDurationSeconds; d != nil {
		leaseDuration = time.Duration(*d) * time.Second
	}
	bound := leaseDuration + 10*time.Second
	if err := second.waitWorking(ctx, bound+time.Minute); err != nil {
		r.fail("the second runtime never led: %v", err)
		return errRow
	}
	took := time.Since(killedAt)
	r.figure("takeoverSeconds", took.Seconds())
	r.figure("leaseDurationSeconds", leaseDuration.Seconds())
	r.saw("the other led %s after the kill (lease %s)", round(took), leaseDuration)
	if took > bound {
		r.fail("the other runtime led %s after the kill, later than the lease (%s) and 10s", round(took), leaseDuration)
	}
	if err := m.waitAllConverged(ctx, ns, n, 5*time.Minute); err != nil {
		r.fail("after the failover: %v", err)
		return errRow
	}
	r.saw("all Ready %s after the kill", round(time.Since(killedAt)))
	st, err := settle(ctx, second, 3*time.Second, 2*time.Minute)
	if err != nil {
		return err
	}
	m.checkWrites(r, second, st, snap.needed)
	m.checkConvergedOnce(ctx, r, ns, snap)
	// A child is created once and never written again; a Widget gets its
	// finalizer and one status.
	total, most := m.track.rewrites(ns)
	r.figure("childRewrites", float64(total[configMapGVR.Resource]))
	r.figure("mostWidgetChanges", float64(most[widgetGVR.Resource]))
	if total[configMapGVR.Resource] > 0 || most[widgetGVR.Resource] > 2 {
		r.fail("written twice: %d writes to children after their creation; a Widget changed %d times (a finalizer and a status are 2)", total[configMapGVR.Resource], most[widgetGVR.Resource])
	} else {
		r.saw("no child written after its creation, no Widget changed more than twice")
	}
	r.failAll(fo.check(ctx, m.c))
	cleanup()
	return nil
}
