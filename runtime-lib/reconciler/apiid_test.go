package reconciler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/fakedns"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
)

// recordsFixture reconciles a DNSRecord against the fake DNS API, whose
// calls it records.
type recordsFixture struct {
	*fixture
	dns   *fakedns.Server
	mu    sync.Mutex
	calls []string
	keys  []string
}

func newRecordsFixture(t *testing.T, spec map[string]any) *recordsFixture {
	t.Helper()
	rf := &recordsFixture{dns: fakedns.New()}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rf.mu.Lock()
		rf.calls = append(rf.calls, r.Method+" "+r.URL.RequestURI())
		rf.keys = append(rf.keys, r.Header.Get("Idempotency-Key"))
		rf.mu.Unlock()
		rf.dns.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	rf.fixture = newRemoteAPIFixture(t, "testdata/records.yaml", server.URL, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "DNSRecord",
		"metadata": map[string]any{"name": "www", "namespace": "shop", "uid": "uid-www"},
		"spec":     spec,
	}})
	return rf
}

// took returns the calls made since the last took.
func (rf *recordsFixture) took() []string {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	out := rf.calls
	rf.calls = nil
	return out
}

func (rf *recordsFixture) status(field string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(rf.get().Object, "status", field)
	return v
}

func TestAPIAssignsIDs(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
	if err := rf.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if got := rf.took(); len(got) != 1 || got[0] != "POST /records" {
		t.Fatalf("first pass called %v, want one POST /records", got)
	}
	id, _ := rf.status("recordId").(string)
	if id == "" || rf.status("value") != "10.0.0.1" || rf.status("version") != int64(1) {
		t.Fatalf("status after the create: %v", rf.get().Object["status"])
	}
	if !strings.HasPrefix(rf.keys[0], "uid-www/") || !strings.HasSuffix(rf.keys[0], "/POST") {
		t.Errorf("Idempotency-Key %q, want <uid>/<generation>/POST", rf.keys[0])
	}

	rf.sync()
	rf.took()
	rf.patchSpec("value", "10.0.0.2")
	if err := rf.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if got := rf.took(); len(got) != 1 || got[0] != "PUT /records/"+id {
		t.Fatalf("after an edit: %v, want PUT /records/%s", got, id)
	}
	if rf.status("recordId") != id || rf.status("value") != "10.0.0.2" || rf.status("version") != int64(2) {
		t.Errorf("status after the update: %v", rf.get().Object["status"])
	}
	if n := len(rf.dns.Records()); n != 1 {
		t.Errorf("the API holds %d records, want 1", n)
	}
}

// TestAPIRecreatesWhatIsGone: a 404 on update means the record is gone;
// it is created again, with its new id kept.
func TestAPIRecreatesWhatIsGone(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
	rf.sync()
	old, _ := rf.status("recordId").(string)
	rf.dns.Remove(old)
	rf.took()
	rf.patchSpec("value", "10.0.0.3")
	if err := rf.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if got := rf.took(); len(got) != 2 || got[0] != "PUT /records/"+old || got[1] != "POST /records" {
		t.Fatalf("calls %v, want the PUT's 404, then a POST", got)
	}
	id, _ := rf.status("recordId").(string)
	recs := rf.dns.Records()
	if id == "" || id == old || len(recs) != 1 || recs[id].Value != "10.0.0.3" {
		t.Errorf("after recreating: id %q (was %q), records %v", id, old, recs)
	}
}

// TestAPIAdoptsWhatExists: a 409 on create means the name is taken; the
// record is found by name, kept, and updated to what the custom resource
// says.
func TestAPIAdoptsWhatExists(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "taken.shop.example", "type": "A", "value": "10.0.0.9"})
	existing := rf.dns.Add("taken.shop.example", "A", "192.0.2.1")
	if err := rf.sync().Err(); err != nil {
		t.Fatal(err)
	}
	got := rf.took()
	want := []string{"POST /records", "GET /records?name=taken.shop.example", "PUT /records/" + existing}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("calls %v, want %v", got, want)
	}
	recs := rf.dns.Records()
	if rf.status("recordId") != existing || len(recs) != 1 || recs[existing].Value != "10.0.0.9" {
		t.Errorf("after adopting: status %v, records %v", rf.get().Object["status"], recs)
	}
}

// TestAPIDeletes: deleting the custom resource deletes its record; a record
// already gone is deleted too.
func TestAPIDeletes(t *testing.T) {
	for _, gone := range []bool{false, true} {
		rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
		rf.sync()
		id, _ := rf.status("recordId").(string)
		if gone {
			rf.dns.Remove(id)
		}
		rf.took()
		if err := rf.store.Delete(context.Background(), rf.get()); err != nil {
			t.Fatal(err)
		}
		if err := rf.sync().Err(); err != nil {
			t.Fatal(err)
		}
		if got := rf.took(); len(got) != 1 || got[0] != "DELETE /records/"+id {
			t.Errorf("gone=%v: calls %v, want DELETE /records/%s", gone, got, id)
		}
		if n := len(rf.dns.Records()); n != 0 {
			t.Errorf("gone=%v: %d records left", gone, n)
		}
	}
}

// TestAPIRefusedStatus: a 4xx the mapping does not name is a failure that
// says what the API answered, not an error about the result's mapping.
func TestAPIRefusedStatus(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "", "type": "A", "value": "x"})
	err := rf.sync().Err()
	if err == nil || !strings.Contains(err.Error(), "answered 400 Bad Request") || strings.Contains(err.Error(), "ReconcileResult") {
		t.Errorf("errors = %v, want the API's 400", err)
	}
}

// TestAPIRecreatesInTheSameGeneration: a record that vanishes while the
// custom resource is unchanged is created again under a key of its own,
// not answered with the first create's reply for the gone record.
func TestAPIRecreatesInTheSameGeneration(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
	rf.sync()
	old, _ := rf.status("recordId").(string)
	rf.dns.Remove(old)
	if err := rf.sync().Err(); err != nil {
		t.Fatal(err)
	}
	id, _ := rf.status("recordId").(string)
	if _, ok := rf.dns.Records()[id]; !ok || id == old {
		t.Errorf("after the record vanished: status.recordId %q (was %q), records %v", id, old, rf.dns.Records())
	}
}

// conditionOf returns a condition's status and message.
func conditionOf(cr *unstructured.Unstructured, condType string) (status, message string) {
	m := condition(cr, condType)
	s, _ := m["status"].(string)
	msg, _ := m["message"].(string)
	return s, msg
}

// TestAPIConditions: with no children, the conditions speak of the API's
// answer for the current generation, and Ready is false while the last
// call failed.
func TestAPIConditions(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
	rf.sync()
	if s, msg := conditionOf(rf.get(), "Ready"); s != "True" || msg != "the reconciler answered for generation 1" {
		t.Errorf("Ready = %s %q", s, msg)
	}
	id, _ := rf.status("recordId").(string)
	rf.dns.Remove(id)
	rf.patchSpec("name", "") // the API refuses an empty name with 400
	rf.sync()
	cr := rf.get()
	if s, _ := conditionOf(cr, "Ready"); s != "False" {
		t.Errorf("Ready = %s after the API refused generation 2", s)
	}
	if s, msg := conditionOf(cr, "Progressing"); s != "False" || strings.Contains(msg, "child") {
		t.Errorf("Progressing = %s %q; a Blueprint without children has no child to speak of", s, msg)
	}
}

// TestAPIDownWhileDeleting: the Degraded condition says why a custom
// resource being deleted is not gone.
func TestAPIDownWhileDeleting(t *testing.T) {
	rf := newRecordsFixture(t, map[string]any{"name": "www.shop.example", "type": "A", "value": "10.0.0.1"})
	rf.sync()
	id, _ := rf.status("recordId").(string)
	rf.dns.Remove(id)
	rf.patchSpec("name", "") // an error before the delete: the recreate is refused
	rf.sync()
	if _, msg := conditionOf(rf.get(), "Degraded"); !strings.Contains(msg, "400") {
		t.Fatalf("Degraded = %q, want the update's 400", msg)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	rf.fixture.rec = rebuild(t, rf.fixture, down.URL)
	if err := rf.store.Delete(context.Background(), rf.get()); err != nil {
		t.Fatal(err)
	}
	rf.sync()
	if _, msg := conditionOf(rf.get(), "Degraded"); !strings.Contains(msg, "finalizing") || !strings.Contains(msg, "503") {
		t.Errorf("Degraded = %q, want the finalizing call's 503", msg)
	}
}

// rebuild returns f's reconciler calling the API at url instead.
func rebuild(t *testing.T, f *fixture, url string) *reconciler.Reconciler {
	t.Helper()
	bp := f.bp.WithRemoteURL(url)
	progs, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	api, err := remote.NewAPI(bp, progs, remote.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := reconciler.New(bp, reconciler.Options{Client: f.store, Remote: api, Renderer: reconciler.CELRenderer{Programs: progs}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
