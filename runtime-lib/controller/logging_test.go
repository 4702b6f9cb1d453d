package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
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
