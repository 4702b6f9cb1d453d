package controller

import (
	"sync"

	"github.com/go-logr/logr"
)

// managerStopMessage and leaderElectionLost are what controller-runtime's
// manager logs, at ERROR, on every stop of a manager with
// LeaderElectionReleaseOnCancel: it releases the Lease, hears that it
// stopped leading, and reports that as an error received while stopping.
// A leadership lost while running is not logged so: Start returns it.
const (
	managerStopMessage = "error received after stop sequence was engaged"
	leaderElectionLost = "leader election lost"
)

// QuietStop returns log, but for the ERROR controller-runtime's manager
// logs on a normal stop when it released its leader-election Lease, which
// it logs at INFO instead: an SRE alerting on errors is not paged by a
// rollout. Its WithValues is lazy: the values reach log's sink only when a
// line is written (quietStopSink).
func QuietStop(log logr.Logger) logr.Logger {
	sink := log.GetSink()
	if sink == nil {
		return log
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the wrapper's own frame
	}
	return logr.New(quietStopSink{base: sink})
}

// quietStopSink is QuietStop's sink. It keeps the values of WithValues
// until a line is written: controller-runtime gives every reconcile a
// logger with the object's kind, name and reconcile ID, and the
// reconciler adds the Blueprint's name, and zap encodes values as it is
// given them (a copy of its encoder, the object reference as reflected
// JSON), about 1 KB of garbage a reconcile that, in the common case, logs
// nothing. A value is encoded as it is when the first line is written.
type quietStopSink struct {
	base    logr.LogSink // the sink, with the values applied so far
	pending []any        // values not applied yet
	applied *appliedSink // base with pending, made once, on the first line
}

type appliedSink struct {
	once sync.Once
	sink logr.LogSink
}

// sink is base with the pending values applied.
func (s quietStopSink) sink() logr.LogSink {
	if len(s.pending) == 0 {
		return s.base
	}
	s.applied.once.Do(func() { s.applied.sink = s.base.WithValues(s.pending...) })
	return s.applied.sink
}

// Init does nothing: the sink wrapped was initialised with its logger.
func (quietStopSink) Init(logr.RuntimeInfo) {}

func (s quietStopSink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s quietStopSink) Info(level int, msg string, kv ...any) { s.sink().Info(level, msg, kv...) }

func (s quietStopSink) Error(err error, msg string, kv ...any) {
	if msg == managerStopMessage && err != nil && err.Error() == leaderElectionLost {
		if s.base.Enabled(0) {
			s.sink().Info(0, "released the leader-election Lease while stopping", kv...)
		}
		return
	}
	s.sink().Error(err, msg, kv...)
}

func (s quietStopSink) WithValues(kv ...any) logr.LogSink {
	pending := make([]any, 0, len(s.pending)+len(kv))
	pending = append(append(pending, s.pending...), kv...)
	return quietStopSink{base: s.base, pending: pending, applied: &appliedSink{}}
}

// WithName names base: a logger's name and its values are independent.
func (s quietStopSink) WithName(name string) logr.LogSink {
	return quietStopSink{base: s.base.WithName(name), pending: s.pending, applied: &appliedSink{}}
}
