package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/sdk"
)

// remoteFault is a way for the remote reconciler to misbehave.
type remoteFault struct {
	id    string
	fault string
	// behave is the faulty reconciler; nil stops it listening.
	behave behavior
	// reason is the reason of the Warning Event it must cause.
	reason string
	// want are words the Degraded condition and the Event must hold.
	want []string
	// attempts is how many HTTP requests one call makes at most: 3 for
	// failures another attempt may cure, 1 for the rest.
	attempts int
	// retryAfter marks a fault whose replies ask for a wait.
	retryAfter bool
	quick      bool
}

// remoteFaults are the reconciler's faults, in the order they run.
func remoteFaults(timeout time.Duration) []remoteFault {
	wrongVersion := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		r["apiVersion"] = "inrun.dev/reconciler/v9"
		return r
	})
	undeclared := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		r["resources"] = append(r["resources"].([]any), map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"},
		})
		return r
	})
	bigStatus := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		r["status"] = map[string]any{"phase": "Running", "size": strings.Repeat("x", sdk.MaxStatusBytes)}
		return r
	})
	takeover := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		r["resources"] = append(r["resources"].([]any), map[string]any{
			"id": "secret", "apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": preciousName},
			"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("overwritten"))},
		})
		return r
	})
	duplicate := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		name := sdk.Resource{Object: req.Object}.Name()
		r["resources"] = append(r["resources"].([]any), map[string]any{
			"id": "a", "apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name + "-again"},
		})
		return r
	})
	done := answer(func(req *sdk.Request) map[string]any {
		r := good(req)
		r["done"] = true
		return r
	})
	return []remoteFault{
		{id: "down", fault: "the reconciler is down (connection refused)", reason: "ReconcilerFailed",
			want: []string{"is unreachable", "connection refused"}, attempts: 3, quick: true},
		{id: "slow", fault: "the reconciler answers after its timeout (" + timeout.String() + ")", behave: slow(timeout + time.Second), reason: "ReconcilerFailed",
			want: []string{"did not answer in time"}, attempts: 3},
		{id: "5xx", fault: "the reconciler answers 500", behave: raw(http.StatusInternalServerError, "faults: the database is down"), reason: "ReconcilerFailed",
			want: []string{"answered 500 Internal Server Error", "the database is down"}, attempts: 3, quick: true},
		{id: "429", fault: "the reconciler answers 429 with Retry-After: 2", behave: raw(http.StatusTooManyRequests, "faults: slow down", "Retry-After", "2"), reason: "ReconcilerFailed",
			want: []string{"answered 429 Too Many Requests"}, attempts: 3, retryAfter: true},
		{id: "truncated", fault: "the reply is cut off half way (Content-Length says more)", behave: truncated(), reason: "ReconcilerFailed",
			want: []string{"was cut short", "bytes its Content-Length announced"}, attempts: 3},
		{id: "invalid-json", fault: "the reply is not JSON", behave: raw(http.StatusOK, `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileResult", "status": {`), reason: "ReconcilerFailed",
			want: []string{"not valid JSON"}, attempts: 1, quick: true},
		{id: "wrong-version", fault: "the reply has apiVersion inrun.dev/reconciler/v9", behave: wrongVersion, reason: "ReconcilerFailed",
			want: []string{"inrun.dev/reconciler/v9"}, attempts: 1},
		{id: "undeclared-kind", fault: "the reply holds a ServiceAccount, a kind reconcile.resources does not declare", behave: undeclared, reason: "ReconcilerFailed",
			want: []string{"not a kind reconcile.resources declares"}, attempts: 1, quick: true},
		{id: "big-status", fault: "the reply's status is over sdk.MaxStatusBytes (256 KiB)", behave: bigStatus, reason: "ReconcilerFailed",
			want: []string{"status is", "bytes long as JSON"}, attempts: 1},
		{id: "big-reply", fault: "the reply is over the client's MaxReplyBytes (16 MiB)", behave: hugeReply(), reason: "ReconcilerFailed",
			want: []string{"the reply is larger than"}, attempts: 1},
		{id: "takeover", fault: "the reply names a Secret a person created", behave: takeover, reason: reconciler.ReasonConflict,
			want: []string{"Secret", preciousName, "already exists and was not created for this custom resource"}, attempts: 1, quick: true},
		{id: "duplicate-ids", fault: "the reply gives two resources one id", behave: duplicate, reason: "ReconcilerFailed",
			want: []string{`"a"`}, attempts: 1},
		{id: "done", fault: "the reply says done outside finalizing", behave: done, reason: "ReconcilerFailed",
			want: []string{"done"}, attempts: 1},
	}
}

// slow answers well, after wait or once the caller has hung up.
func slow(wait time.Duration) behavior {
	ok := answer(good)
	return func(w http.ResponseWriter, r *http.Request, req *sdk.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(wait):
		}
		ok(w, r, req)
	}
}

// truncated sends the headers of the good answer and half of its body,
// then closes the connection.
func truncated() behavior {
	return func(w http.ResponseWriter, _ *http.Request, req *sdk.Request) {
		rec := &bodyRecorder{header: http.Header{}}
		answer(good)(rec, nil, req)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(rec.body))
		buf.Write(rec.body[:len(rec.body)/2])
		buf.Flush()
	}
}

// bodyRecorder keeps what a behaviour writes.
type bodyRecorder struct {
	header http.Header
	body   []byte
}

func (b *bodyRecorder) Header() http.Header { return b.header }
func (b *bodyRecorder) Write(p []byte) (int, error) {
	b.body = append(b.body, p...)
	return len(p), nil
}
func (b *bodyRecorder) WriteHeader(int) {}

// hugeReply answers a valid-looking Result of 17 MiB.
func hugeReply() behavior {
	var once sync.Once
	var body string
	return func(w http.ResponseWriter, r *http.Request, req *sdk.Request) {
		once.Do(func() {
			body = `{"apiVersion": "` + sdk.APIVersion + `", "kind": "ReconcileResult", "status": {"phase": "` + strings.Repeat("x", 17<<20) + `"}}`
		})
		raw(http.StatusOK, body)(w, r, req)
	}
}

// remoteRow runs one reconciler fault: from a converged Widget with
// children, the reconciler turns faulty and the Widget is made to
// reconcile; then the reconciler is fixed and nothing else is done.
func (m *matrix) remoteRow(ctx context.Context, f remoteFault, r *Row) error {
	p, err := m.sharedRuntime(ctx)
	if err != nil {
		return err
	}
	ns, cleanup, err := m.namespace(ctx, r, f.id)
	if err != nil {
		return err
	}
	defer cleanup()
	fo, err := m.makeForeign(ctx, ns)
	if err != nil {
		return err
	}
	const name = "widget"
	key := ns + "/" + name
	if err := m.createWidget(ctx, ns, name, map[string]any{"size": "small"}); err != nil {
		return err
	}
	if err := m.waitConverged(ctx, ns, name, time.Minute); err != nil {
		return fmt.Errorf("converging before the fault: %w", err)
	}
	w, err := m.getWidget(ctx, ns, name)
	if err != nil {
		return err
	}
	before, err := m.childUIDs(ctx, w)
	if err != nil {
		return err
	}
	if len(before) != wantChildren {
		r.fail("converged with %d children, want %d: %v", len(before), wantChildren, before)
	}

	start := time.Now()
	fixed := false
	fix := func() error {
		if fixed {
			return nil
		}
		fixed = true
		if f.behave == nil {
			return m.rec.up()
		}
		m.rec.set(key, nil)
		return nil
	}
	defer fix()
	if f.behave == nil {
		if err := m.rec.down(); err != nil {
			return err
		}
	} else {
		m.rec.set(key, f.behave)
	}
	// An annotation changes the request, so the reconciler is asked.
	if err := m.patchWidget(ctx, ns, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"faults.inrun.dev/trigger": f.id}}}); err != nil {
		return err
	}
	msg, err := m.waitDegraded(ctx, ns, name, f.want, 2*time.Minute)
	r.message("degraded", msg)
	if err != nil {
		r.fail("Degraded: %v", err)
		return errRow
	}
	degradedAt := time.Now()
	r.figure("degradedSeconds", degradedAt.Sub(start).Seconds())
	r.saw("Degraded in %s", round(degradedAt.Sub(start)))
	if w, err := m.getWidget(ctx, ns, name); err == nil {
		if s, _, _ := condition(w, reconciler.ConditionReady); s != "False" {
			r.fail("Ready is %q while Degraded", s)
		}
	}
	note, err := m.warningEvent(ctx, ns, name, f.reason, f.want, 30*time.Second)
	r.message("event", note)
	if err != nil {
		r.fail("Event: %v", err)
	} else {
		r.saw("Warning %s Event", f.reason)
	}

	// How often the failing Widget is reconciled while the fault lasts.
	s0, err := p.stats(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(m.opts.window - time.Since(degradedAt)):
	}
	s1, err := p.stats(ctx)
	if err != nil {
		return err
	}
	windowEnd := degradedAt.Add(m.opts.window)
	reconciles := int(s1.reconciles - s0.reconciles)
	calls := m.rec.callsBetween(key, degradedAt, windowEnd)
	bound := retryBound(m.opts.window, m.opts.maxBackoff)
	r.figure("reconcilesInWindow", float64(reconciles))
	r.figure("callsInWindow", float64(calls))
	r.figure("reconcileBound", float64(bound))
	r.figure("writesInWindow", float64(s1.sub(s0).objectWrites()))
	if f.behave == nil {
		r.saw("%d reconciles in %s (bound %d)", reconciles, round(m.opts.window), bound)
	} else {
		r.saw("%d reconciles, %d calls in %s (bound %d, %d)", reconciles, calls, round(m.opts.window), bound, bound*f.attempts)
	}
	if reconciles > bound {
		r.fail("%d reconciles in %s, more than the backoff allows (%d)", reconciles, m.opts.window, bound)
	}
	if calls > bound*f.attempts {
		r.fail("%d calls in %s, more than the backoff allows (%d)", calls, m.opts.window, bound*f.attempts)
	}
	if f.retryAfter {
		n, gap := m.rec.early(key)
		r.figure("callsSoonerThanRetryAfter", float64(n))
		if n > 0 {
			r.fail("%d calls came sooner than the Retry-After of the reply before them (the shortest gap %s)", n, round(gap))
		} else {
			r.saw("Retry-After honoured")
		}
	}
	if n := m.track.changedSince(uidsOf(before), start); n > 0 {
		r.fail("the children were written %d times during the fault", n)
	}

	if err := fix(); err != nil {
		return err
	}
	fixedAt := time.Now()
	if err := m.waitConverged(ctx, ns, name, m.opts.maxBackoff+2*time.Minute); err != nil {
		r.fail("no recovery once fixed: %v", err)
		return errRow
	}
	r.figure("recoverySeconds", time.Since(fixedAt).Seconds())
	r.saw("Ready again %s after the fix, unedited", round(time.Since(fixedAt)))
	m.checkKept(ctx, r, ns, name, before, start)
	r.failAll(fo.check(ctx, m.c))
	if !p.alive() {
		r.fail("the runtime exited: %v", p.exitError())
	}
	return nil
}

// checkKept checks that the Widget's children are those of before, none
// deleted or replaced since start, and says so.
func (m *matrix) checkKept(ctx context.Context, r *Row, ns, name string, before map[string]types.UID, start time.Time) {
	w, err := m.getWidget(ctx, ns, name)
	if err != nil {
		r.fail("%v", err)
		return
	}
	after, err := m.childUIDs(ctx, w)
	if err != nil {
		r.fail("%v", err)
		return
	}
	problems := compareChildren(before, after)
	problems = append(problems, prefixed("deleted: ", m.track.deletedIn(ns, start))...)
	problems = append(problems, prefixed("created twice: ", m.track.recreated(ns))...)
	r.failAll(problems)
	if len(problems) == 0 {
		r.saw("%d children kept (same UIDs), none deleted", len(before))
	}
}

func prefixed(prefix string, s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = prefix + x
	}
	return out
}

// retryBound is the most reconciles of one failing custom resource that
// can start within window: the work queue waits 5ms after the first
// failure, twice as long after each failure in a row, at most maxBackoff.
// Counting from the first failure makes it an upper bound for any window.
func retryBound(window, maxBackoff time.Duration) int {
	n := 1
	var elapsed time.Duration
	for d := 5 * time.Millisecond; ; d *= 2 {
		d = min(d, maxBackoff)
		if elapsed += d; elapsed > window {
			return n
		}
		n++
	}
}

// round shortens d for people.
func round(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
