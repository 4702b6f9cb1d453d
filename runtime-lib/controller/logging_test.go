package controller

import (
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestQuietStop: the manager's report of the Lease it released while
// stopping is INFO; every other error stays an error.
func TestQuietStop(t *testing.T) {
	var lines []string
	log := QuietStop(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
	log.WithName("manager").Error(errors.New(leaderElectionLost), managerStopMessage)
	log.Error(errors.New("boom"), managerStopMessage)
	log.Error(errors.New(leaderElectionLost), "another message")
	if len(lines) != 3 {
		t.Fatalf("logged %q, want three lines", lines)
	}
	if strings.Contains(lines[0], `"error"`) || !strings.Contains(lines[0], "released the leader-election Lease") {
		t.Errorf("the stop's release logged as %s, want INFO", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, `"error"`) {
			t.Errorf("%s lost its error", l)
		}
	}
}

// TestQuietStopWritesWhatTheSinkWould: names and values reach the lines as
// the sink itself writes them, in order, however WithName and WithValues
// are interleaved.
func TestQuietStopWritesWhatTheSinkWould(t *testing.T) {
	var direct, quiet []string
	plain := funcr.New(func(prefix, args string) { direct = append(direct, prefix+" "+args) }, funcr.Options{Verbosity: 1})
	wrapped := QuietStop(funcr.New(func(prefix, args string) { quiet = append(quiet, prefix+" "+args) }, funcr.Options{Verbosity: 1}))
	for _, log := range []logr.Logger{plain, wrapped} {
		a := log.WithValues("controller", "website").WithName("reconciler")
		b := a.WithValues("name", "site-1", "reconcileID", "7")
		b.Info("applied", "children", 2)
		a.V(1).Info("started")
		a.V(2).Info("not enabled")
		b.WithName("pass").WithValues("blueprint", "website").Error(errors.New("boom"), "failed", "child", "svc")
		log.Info("bare")
	}
	if strings.Join(quiet, "\n") != strings.Join(direct, "\n") {
		t.Errorf("the wrapped logger wrote\n%s\nwant\n%s", strings.Join(quiet, "\n"), strings.Join(direct, "\n"))
	}
	if len(direct) != 4 {
		t.Errorf("wrote %d lines, want 4", len(direct))
	}
}

// countingSink counts the WithValues calls it gets.
type countingSink struct {
	logr.LogSink
	withValues *atomic.Int32
}

func (s countingSink) WithValues(kv ...any) logr.LogSink {
	s.withValues.Add(1)
	return countingSink{s.LogSink.WithValues(kv...), s.withValues}
}

// TestQuietStopValuesLazy: values reach the sink only once a line is
// written, and once for every line of that logger, written at once by
// many goroutines.
func TestQuietStopValuesLazy(t *testing.T) {
	var calls atomic.Int32
	var lines atomic.Int32
	sink := countingSink{funcr.New(func(string, string) { lines.Add(1) }, funcr.Options{}).GetSink(), &calls}
	log := QuietStop(logr.New(sink))
	quiet := log.WithValues("name", "site-1").WithValues("reconcileID", "7")
	quiet.V(3).Info("not enabled")
	if n := calls.Load(); n != 0 {
		t.Fatalf("the sink got %d WithValues before any line, want 0", n)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			quiet.Info("applied")
		}()
	}
	wg.Wait()
	if n, l := calls.Load(), lines.Load(); n != 1 || l != 8 {
		t.Errorf("the sink got %d WithValues for %d lines, want 1 for 8", n, l)
	}
}

// BenchmarkReconcileLogger: the logger a reconcile gets and adds to, as
// controller-runtime and the reconciler make it, on controller-runtime's
// zap logger, when the reconcile logs nothing.
func BenchmarkReconcileLogger(b *testing.B) {
	zapLog := ctrlzap.New(ctrlzap.WriteTo(io.Discard))
	for _, bc := range []struct {
		name string
		log  logr.Logger
	}{{"zap", zapLog}, {"QuietStop", QuietStop(zapLog)}} {
		b.Run(bc.name, func(b *testing.B) {
			ctrl := bc.log.WithValues("controller", "website", "controllerGroup", "example.inrun.dev", "controllerKind", "Website")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				log := ctrl.WithValues("Website", klog.KRef("bench", "site-1"), "namespace", "bench", "name", "site-1")
				log = log.WithValues("reconcileID", "5d1e0c2a-1111-2222-3333-444455556666")
				log = log.WithValues("blueprint", "website")
				log.V(5).Info("Reconciling")
			}
		})
	}
}
