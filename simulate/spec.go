package simulate

import (
	"errors"
	"io/fs"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/internal/yamlpos"
)

// File is a test/simulate.yaml: cases run against one Blueprint. The format
// is documented in docs/simulate.md.
type File struct {
	// Reconciler is a reconciler process started for the cases, whose URL
	// replaces the Blueprint's reconcile.url; nil when the cases call the
	// reconciler the Blueprint names, already running.
	Reconciler *Reconciler
	// Reply is a recorded ReconcileResult that an HTTP server in this
	// process answers every request with, instead of a reconciler.
	Reply map[string]any
	Cases []Case

	// Path is where the file was read from.
	Path string

	// process is the reconciler Simulator.Serve keeps running.
	process *Process
	// replyNode is Reply's YAML, for positions.
	replyNode *yaml.Node
}

// Case is one simulated scenario.
type Case struct {
	Name string
	// CR is the path of the custom resource's file, relative to the
	// simulate file; empty when Object gives it inline.
	CR      string
	Object  map[string]any
	Objects []map[string]any
	// Passes is how many passes to run; zero means DefaultPasses.
	Passes  int
	Observe []Observation
	Expect  Expectation
	// Reply is the case's recorded reply, instead of the file's reconciler
	// or reply.
	Reply map[string]any
	// Steps change the CR after the first passes and Expect, in order.
	Steps []Step

	// objectNode and replyNode are Object's and Reply's YAML in the
	// simulate file, for positions.
	objectNode, replyNode *yaml.Node
	// pos is where, in the simulate file, each child id and status field
	// the case names is, by its path in the case (expect.absent[0]); nil
	// for a case not read from a file.
	pos map[string]diag.Pos
}

// Step changes the custom resource, runs more passes and checks what holds
// after them.
type Step struct {
	// Patch is a JSON merge patch applied to the CR.
	Patch map[string]any
	// Delete deletes the CR: the passes then finalize it.
	Delete bool
	// Reply replaces the recorded reply from this step on. After a delete,
	// finalizing requests get it; without one, they get done: true.
	Reply map[string]any
	// Passes is how many passes to run; zero means DefaultPasses.
	Passes  int
	Observe []Observation
	Expect  Expectation

	// replyNode is Reply's YAML, for positions.
	replyNode *yaml.Node
}

// Observation is status the cluster would write onto a child after a pass.
type Observation struct {
	AfterPass int
	Child     string
	Status    map[string]any
}

// Expectation is what must hold after the passes.
type Expectation struct {
	Children []ChildExpectation
	Absent   []string
	Status   map[string]any
	// Metadata is a partial match on the CR's metadata: the labels,
	// annotations and finalizers a reconciler sets.
	Metadata map[string]any
	// Events is a partial match on the Events recorded on the CR during
	// the passes, in order, each {type, reason, action, message}: a list (as
	// many as there are) or match.Contains.
	Events any
	Errors []string
	// Gone expects the CR to no longer exist: deleted, and every finalizer
	// done with it.
	Gone bool
	// Refused expects the API server to refuse the case's CR, or the
	// step's patch, with a message holding each of these substrings.
	// Nothing is stored and no pass runs.
	Refused []string
}

// ChildExpectation is a partial match on one child, or on the objects of
// a collection.
type ChildExpectation struct {
	ID    string
	Match map[string]any
	// Items is a partial match on a collection's objects, sorted by
	// namespace and name: a list (as many as there are) or match.Contains.
	Items any
	// Count, when not nil, is how many objects the child must have.
	Count *int64
}

// DefaultPasses is how many passes a case runs when it does not say.
const DefaultPasses = 2

// ReadFile reads and checks a simulate file, as Parse does.
func ReadFile(path string) (*File, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, unreadable(path, "the simulate file", err)
	}
	return Parse(path, data)
}

// Parse decodes a simulate file strictly and checks every case, reporting
// every problem at once as diagnostics (package internal/diag), sorted,
// each with its file:line:col and code: unknown fields (with the field
// probably meant), values of the wrong type, missing or repeated names,
// cases with both or neither of cr and object, observations after the last
// pass, steps after a delete, and recorded replies the runtime would not
// accept. Problems of a case name it, or cases[i] when it has no name, and
// give the field's path within it.
func Parse(path string, data []byte) (*File, error) {
	var diags diag.List
	r := yamlpos.NewReader(path, &diags)
	r.What = "the simulate file"
	f := (&parser{Reader: r}).file(data)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// unreadable is the one diagnostic of a file that cannot be read.
func unreadable(path, what string, err error) error {
	hint := ""
	if errors.Is(err, fs.ErrNotExist) {
		hint = "check the path"
		if what == "the simulate file" {
			hint += ", or create the file: docs/simulate.md says what goes in it (inrun init writes one in every example)"
		}
	}
	var l diag.List
	l.Add(diag.Pos{File: path}, diag.UnreadableFile, hint, "cannot read %s: %v", what, pathErrorText(err))
	return l.Err()
}

// pathErrorText is err's cause without the path, which the diagnostic
// already names.
func pathErrorText(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// LoadCR returns a case's custom resource, read from its file relative to
// the simulate file, or inline.
func (f *File) LoadCR(c *Case) (*unstructured.Unstructured, error) {
	if c.Object != nil {
		return &unstructured.Unstructured{Object: deepCopy(c.Object)}, nil
	}
	return ReadObject(f.crPath(c))
}

// crPath is the path of a case's cr: file.
func (f *File) crPath(c *Case) string {
	if filepath.IsAbs(c.CR) {
		return c.CR
	}
	return filepath.Join(filepath.Dir(f.Path), c.CR)
}

// ReadObject reads one Kubernetes object from a YAML file, with integers as
// int64 as Kubernetes' own decoding has them. Its problems are diagnostics
// at their place in the file.
func ReadObject(path string) (*unstructured.Unstructured, error) {
	u, _, diags := readObject(path)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return u, nil
}

func deepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
