package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
)

// TestMain lets the test binary serve as the benchmark's operator
// subprocess, as the command's own main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == operatorCommand {
		if err := runOperator(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench operator:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchmarkEndToEnd runs the whole benchmark, every kind, with a
// handful of Websites on a real local control plane, so that make bench
// keeps working, and checks the figures that do not depend on the
// machine: every Website converged, the write counts, the quiet windows.
func TestBenchmarkEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and builds an operator")
	}
	const n = 4
	res, table := runBench(t, n)
	byKind := map[string]*Run{}
	for _, r := range res.Runs {
		byKind[r.Kind] = r
	}
	for _, kind := range runnable {
		r := byKind[kind]
		switch {
		case r == nil:
			t.Errorf("%s did not run", kind)
			continue
		case r.Error != "":
			t.Errorf("%s failed: %s", kind, r.Error)
			continue
		case r.Create == nil || r.Edit == nil:
			t.Errorf("%s has no create or edit figures", kind)
			continue
		}
		for name, ph := range map[string]*Phase{"create": r.Create, "edit": r.Edit} {
			if ph.QuietWrites != 0 || ph.QuietClientWrites != 0 {
				t.Errorf("%s %s: %d writes (%d by its client) in the quiet window, want none: %v", kind, name, ph.QuietWrites, ph.QuietClientWrites, ph.QuietClientByRequest)
			}
			if ph.Writes != ph.ClientWrites {
				t.Errorf("%s %s: the API server counted %d writes, the operator's client %d", kind, name, ph.Writes, ph.ClientWrites)
			}
			if ph.ReadySeconds <= 0 {
				t.Errorf("%s %s: all Ready after %v s", kind, name, ph.ReadySeconds)
			}
		}
	}
	if t.Failed() {
		t.Fatalf("table:\n%s", table.String())
	}
	// The limit makes exactly the writes a Website needs: two children
	// and a status on create, the Deployment and a status on edit.
	if l := byKind[kindLimit]; l.Create.Writes != 3*n || l.Edit.Writes != 2*n {
		t.Errorf("limit: %d writes on create, %d on edit; want %d and %d", l.Create.Writes, l.Edit.Writes, 3*n, 2*n)
	}
	// Inrun writes no more than the hand-written operator, and at least
	// what the limit writes.
	for _, kind := range []string{kindInterpreted, kindCompiled} {
		r, hand := byKind[kind], byKind[kindHandwritten]
		for name, pair := range map[string][2]*Phase{"create": {r.Create, hand.Create}, "edit": {r.Edit, hand.Edit}} {
			if pair[0].Writes > pair[1].Writes {
				t.Errorf("%s %s: %d writes, more than the hand-written operator's %d", kind, name, pair[0].Writes, pair[1].Writes)
			}
		}
		if r.Create.Writes < 3*n {
			t.Errorf("%s create: %d writes, fewer than the %d a Website needs", kind, r.Create.Writes, 3*n)
		}
	}
	if !strings.Contains(table.String(), "compiled") {
		t.Errorf("the table has no compiled column:\n%s", table.String())
	}
}

// TestPairedBenchmark runs the interpreted runtime side by side with a
// hand-written operator (-paired) with a handful of Websites, and checks
// that each reconciled its own namespace's Websites and no others', and
// that the API server's figures, the pair's, are left out of the table.
func TestPairedBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	const n = 4
	res, table := runBench(t, n, "-paired", "-only", "interpreted")
	defer func() {
		if t.Failed() {
			t.Logf("table:\n%s", table.String())
		}
	}()
	if !res.Paired || len(res.Runs) != 2 {
		t.Fatalf("paired %v, %d runs; want a pair", res.Paired, len(res.Runs))
	}
	hand, inrun := res.Runs[0], res.Runs[1]
	if hand.Kind != kindHandwritten || hand.Beside != kindInterpreted || inrun.Kind != kindInterpreted {
		t.Fatalf("runs %s (beside %q) and %s; want the hand-written operator beside the interpreted runtime", hand.Kind, hand.Beside, inrun.Kind)
	}
	for _, r := range res.Runs {
		if r.Error != "" || r.Create == nil || r.Edit == nil {
			t.Fatalf("%s: error %q, create %v, edit %v", r.label(), r.Error, r.Create != nil, r.Edit != nil)
		}
		for name, ph := range map[string]*Phase{"create": r.Create, "edit": r.Edit} {
			if !ph.SharedControlPlane {
				t.Errorf("%s %s: not marked as sharing the control plane", r.label(), name)
			}
			if ph.QuietClientWrites != 0 {
				t.Errorf("%s %s: %d writes in the quiet window: %v", r.label(), name, ph.QuietClientWrites, ph.QuietClientByRequest)
			}
			if ph.ReadySeconds <= 0 || ph.CPUSeconds[operatorCPU] <= 0 || ph.RSSBytes <= 0 {
				t.Errorf("%s %s: Ready after %v s, operator CPU %v s, RSS %d", r.label(), name, ph.ReadySeconds, ph.CPUSeconds[operatorCPU], ph.RSSBytes)
			}
		}
		if r.Create.ClientWrites < 3*n {
			t.Errorf("%s create: %d writes, fewer than the %d its Websites need", r.label(), r.Create.ClientWrites, 3*n)
		}
	}
	// Confined to its namespace, the runtime records one Event per
	// Website it created or changed children of: n, not the 2n of both
	// namespaces (the hand-written operator would make its children
	// conflict, too).
	for name, ph := range map[string]*Phase{"create": inrun.Create, "edit": inrun.Edit} {
		if ph.Events != n {
			t.Errorf("interpreted %s: %d Events for %d Websites of its own", name, ph.Events, n)
		}
	}
	for _, want := range []string{"Paired:", "interpreted", "×H"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table has no %q", want)
		}
	}
	for _, line := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(line, "create: kube-apiserver CPU") && strings.Contains(line, "s ") && !strings.Contains(line, "—") {
			t.Errorf("the API server's CPU is shown for one operator of a pair: %q", line)
		}
	}
}

// runBench runs the benchmark with n Websites, short quiet windows and the
// flags given, on a control plane of its own, and returns its figures and
// table; the progress is logged when the test fails.
func runBench(t *testing.T, n int, flags ...string) (*Results, *bytes.Buffer) {
	t.Helper()
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	out := filepath.Join(t.TempDir(), "bench.json")
	opts, err := parseFlags(append([]string{
		"-n", fmt.Sprint(n), "-quiet", "2s", "-settle", "3s", "-json", out,
		"-blueprint", "../packs/website/blueprint.yaml",
	}, flags...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	table := &bytes.Buffer{}
	progress := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("progress:\n%s", progress.String())
		}
	})
	if err := run(context.Background(), opts, table, progress); err != nil {
		t.Fatalf("%v\n%s", err, table.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return &res, table
}

// lockedBuffer keeps the benchmark's progress, which the control plane's
// goroutines write too.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestParsePairedFlags(t *testing.T) {
	opts, err := parseFlags([]string{"-paired", "-only", "compiled,interpreted"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{kindHandwritten, kindInterpreted, kindCompiled}; !slices.Equal(opts.only, want) {
		t.Errorf("-paired -only compiled,interpreted runs %v, want %v: each beside a hand-written operator", opts.only, want)
	}
	for args, want := range map[string]string{
		"-paired -only limit,interpreted": "drop it from -only",
		"-paired -only handwritten":       "needs interpreted or compiled",
	} {
		if _, err := parseFlags(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", args, err, want)
		}
	}
}

// TestPairedTable checks the table of a paired run: each Inrun kind after
// the hand-written operator that ran beside it, compared with that one
// only, and the API server's figures left out.
func TestPairedTable(t *testing.T) {
	phase := func(cpu float64) *Phase {
		return &Phase{SharedControlPlane: true, ReadySeconds: 10, WritesPerCR: 3, CPUSeconds: map[string]float64{operatorCPU: cpu, "kube-apiserver": 9}}
	}
	res := &Results{N: 10, Paired: true}
	for round := 1; round <= 3; round++ {
		res.Runs = append(res.Runs,
			&Run{Kind: kindHandwritten, Beside: kindInterpreted, Round: round, Create: phase(2), Edit: phase(2)},
			&Run{Kind: kindInterpreted, Round: round, Create: phase(3), Edit: phase(1)},
			&Run{Kind: kindHandwritten, Beside: kindCompiled, Round: round, Create: phase(4), Edit: phase(4)},
			&Run{Kind: kindCompiled, Round: round, Create: phase(2), Edit: phase(6)},
		)
	}
	var out bytes.Buffer
	printTable(&out, res)
	table := out.String()
	header := ""
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "figure"):
			header = strings.Join(fields[1:], " ")
		case strings.HasPrefix(line, "create: operator CPU"):
			if want := "2.0s 3.0s 1.50×H 4.0s 2.0s 0.50×H"; strings.Join(fields[3:], " ") != want {
				t.Errorf("create CPU row %q, want %q", line, want)
			}
		case strings.HasPrefix(line, "edit: operator CPU"):
			if want := "2.0s 1.0s 0.50×H 4.0s 6.0s 1.50×H"; strings.Join(fields[3:], " ") != want {
				t.Errorf("edit CPU row %q, want %q", line, want)
			}
		case strings.HasPrefix(line, "create: kube-apiserver CPU"), strings.HasPrefix(line, "create: writes/CR (API server)"):
			if strings.Count(line, "—") != 4 {
				t.Errorf("a figure of the API server is shown for one operator of a pair: %q", line)
			}
		}
	}
	if want := "handwritten-beside-interpreted interpreted handwritten-beside-compiled compiled"; header != want {
		t.Errorf("columns %q, want %q", header, want)
	}
	if !strings.Contains(table, "the median of 3 rounds") {
		t.Errorf("the table does not say it has the medians of 3 rounds:\n%s", table)
	}
	if t.Failed() {
		t.Logf("table:\n%s", table)
	}
}
