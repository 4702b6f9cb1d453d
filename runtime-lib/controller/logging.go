package controller

import (
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
// rollout.
func QuietStop(log logr.Logger) logr.Logger {
	sink := log.GetSink()
	if sink == nil {
		return log
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the wrapper's own frame
	}
	return logr.New(quietStopSink{sink})
}

type quietStopSink struct{ logr.LogSink }

// Init does nothing: the sink wrapped was initialised with its logger.
func (quietStopSink) Init(logr.RuntimeInfo) {}

func (s quietStopSink) Error(err error, msg string, kv ...any) {
	if msg == managerStopMessage && err != nil && err.Error() == leaderElectionLost {
		if s.LogSink.Enabled(0) {
			s.LogSink.Info(0, "released the leader-election Lease while stopping", kv...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s quietStopSink) WithValues(kv ...any) logr.LogSink {
	return quietStopSink{s.LogSink.WithValues(kv...)}
}

func (s quietStopSink) WithName(name string) logr.LogSink {
	return quietStopSink{s.LogSink.WithName(name)}
}
