package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
)

// TestQuickMatrix runs the quick subset of the fault matrix (-quick) on a
// local control plane, as make faults runs the whole of it: every row must
// pass, and the table and the JSON must say so.
func TestQuickMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and builds inrun")
	}
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Minimal})
	out := filepath.Join(t.TempDir(), "faults.json")
	opts, err := parseFlags([]string{"-quick", "-json", out}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(t.Context(), opts, t.Output())
	if res != nil {
		var table bytes.Buffer
		printTable(&table, res)
		t.Logf("\n%s", table.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got Results
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	var quickRows []string
	for _, r := range rows(opts) {
		if r.quick {
			quickRows = append(quickRows, r.id)
		}
	}
	if len(got.Rows) != len(quickRows) {
		t.Fatalf("the JSON has %d rows, want the %d quick ones %v", len(got.Rows), len(quickRows), quickRows)
	}
	for _, r := range got.Rows {
		if !r.Pass || r.Measured == "" {
			t.Errorf("row %s: pass %v, measured %q, problems %q", r.ID, r.Pass, r.Measured, r.Problems)
		}
	}
}

func TestRetryBound(t *testing.T) {
	for _, tc := range []struct {
		window, max time.Duration
		want        int
	}{
		// 5, 10, 20, ..., 2560ms sum to 5.115s; then one every 2s.
		{6 * time.Second, 2 * time.Second, 11},
		// 5ms .. 5.12s capped at 10s: 11 waits in 10.235s, then 10s each.
		{30 * time.Second, 10 * time.Second, 13},
		{time.Millisecond, time.Second, 1},
	} {
		if got := retryBound(tc.window, tc.max); got != tc.want {
			t.Errorf("retryBound(%s, %s) = %d, want %d", tc.window, tc.max, got, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-quick"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.n != quick.n || o.window != quick.window || o.maxBackoff != quick.maxBackoff {
		t.Errorf("-quick gives %+v, want the quick defaults %+v", o, quick)
	}
	for _, r := range selected(o) {
		if !r.quick {
			t.Errorf("-quick selects %s, which is not quick", r.id)
		}
	}
	o, err = parseFlags([]string{"-only", "kill,down"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range selected(o) {
		ids = append(ids, r.id)
	}
	if strings.Join(ids, ",") != "down,kill" {
		t.Errorf("-only kill,down selects %v, want down and kill in the matrix's order", ids)
	}
	if _, err := parseFlags([]string{"-only", "nosuch"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "unknown row") {
		t.Errorf("-only nosuch: %v, want an unknown row", err)
	}
	if o.n != full.n {
		t.Errorf("-n defaults to %d, want %d", o.n, full.n)
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, &Results{Rows: []*Row{
		{ID: "a", Fault: "one | two", Expected: "x", Measured: "y", Pass: true},
		{ID: "b", Fault: "three", Expected: "x", Measured: "z", Problems: []string{"it broke"}},
	}})
	want := "| fault | expected | measured | result |\n|---|---|---|---|\n" +
		"| one \\| two | x | y | pass |\n| three | x | z | **FAIL** |\n\n2 rows, 1 passed, 1 failed.\nb: it broke\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestRepeatedWrites reads the lines a runtime logs at V(1) for its writes
// (as controller-runtime's development logger writes them) and names what
// was written twice.
func TestRepeatedWrites(t *testing.T) {
	const (
		status = "2026-12-06T14:17:04Z\tDEBUG\twidget\twrote status\t" +
			`{"controller": "widget", "Widget": {"name":"w-010","namespace":"ns"}, "namespace": "ns", "name": "w-010", "resourceVersion": "1", "now": "2"}`
		other = "2026-12-06T14:17:04Z\tDEBUG\twidget\twrote status\t" +
			`{"controller": "widget", "Widget": {"name":"w-011","namespace":"ns"}, "namespace": "ns", "name": "w-011", "resourceVersion": "1", "now": "2"}`
		child = "2026-12-06T14:17:04Z\tDEBUG\twidget\tapplied child\t" +
			`{"controller": "widget", "Widget": {"name":"w-010","namespace":"ns"}, "namespace": "ns", "name": "w-010", "child": "a", "object": "ConfigMap ns/w-010-a"}`
	)
	path := filepath.Join(t.TempDir(), "inrun.log")
	if err := os.WriteFile(path, []byte(strings.Join([]string{status, child, other, status, child, child}, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := repeatedWrites(path)
	want := []string{
		"wrote status w-010 2 times:\n" + status + "\n" + status,
		"applied child ConfigMap ns/w-010-a 3 times:\n" + child + "\n" + child + "\n" + child,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repeatedWrites (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(path, []byte(status+"\n"+other+"\n"+child), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := repeatedWrites(path); len(got) != 1 || got[0] != "no object written twice in its log" {
		t.Errorf("with every object written once, repeatedWrites = %q", got)
	}
}
