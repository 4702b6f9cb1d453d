package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckNamesTheWorkflow checks that inrun check's line names a
// Blueprint's workflow steps.
func TestCheckNamesTheWorkflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders")
	if out, err := run(t, t.TempDir(), "init", dir, "--pack", "workflow"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := run(t, dir, "check")
	if err != nil || !strings.Contains(out, "; a workflow of 3 steps: Reserve, Charge, Ship") {
		t.Errorf("check: %v\n%s", err, out)
	}
}
