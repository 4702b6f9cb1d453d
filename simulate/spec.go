package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/inrun/inrun/sdk"
)

// File is a test/simulate.yaml: cases run against one Blueprint. The format
// is documented in docs/simulate.md.
type File struct {
	// Reconciler is a reconciler process started for the cases, whose URL
	// replaces the Blueprint's reconcile.url; nil when the cases call the
	// reconciler the Blueprint names, already running.
	Reconciler *Reconciler `json:"reconciler,omitempty"`
	// Reply is a recorded ReconcileResult that an HTTP server in this
	// process answers every request with, instead of a reconciler.
	Reply map[string]any `json:"reply,omitempty"`
	Cases []Case         `json:"cases"`

	// Path is where the file was read from.
	Path string `json:"-"`

	// process is the reconciler Simulator.Serve keeps running.
	process *Process
}

// Case is one simulated scenario.
type Case struct {
	Name    string           `json:"name"`
	CR      string           `json:"cr,omitempty"`
	Object  map[string]any   `json:"object,omitempty"`
	Objects []map[string]any `json:"objects,omitempty"`
	Passes  int              `json:"passes,omitempty"`
	Observe []Observation    `json:"observe,omitempty"`
	Expect  Expectation      `json:"expect"`
	// Reply is the case's recorded reply, instead of the file's reconciler
	// or reply.
	Reply map[string]any `json:"reply,omitempty"`
	// Steps change the CR after the first passes and Expect, in order.
	Steps []Step `json:"steps,omitempty"`
}

// Step changes the custom resource, runs more passes and checks what holds
// after them.
type Step struct {
	// Patch is a JSON merge patch applied to the CR.
	Patch map[string]any `json:"patch,omitempty"`
	// Delete deletes the CR: the passes then finalize it.
	Delete bool `json:"delete,omitempty"`
	// Reply replaces the recorded reply from this step on. After a delete,
	// finalizing requests get it; without one, they get done: true.
	Reply   map[string]any `json:"reply,omitempty"`
	Passes  int            `json:"passes,omitempty"`
	Observe []Observation  `json:"observe,omitempty"`
	Expect  Expectation    `json:"expect"`
}

// Observation is status the cluster would write onto a child after a pass.
type Observation struct {
	AfterPass int            `json:"afterPass"`
	Child     string         `json:"child"`
	Status    map[string]any `json:"status"`
}

// Expectation is what must hold after the passes.
type Expectation struct {
	Children []ChildExpectation `json:"children,omitempty"`
	Absent   []string           `json:"absent,omitempty"`
	Status   map[string]any     `json:"status,omitempty"`
	Errors   []string           `json:"errors,omitempty"`
	// Gone expects the CR to no longer exist: deleted, and every finalizer
	// done with it.
	Gone bool `json:"gone,omitempty"`
}

// ChildExpectation is a partial match on one child.
type ChildExpectation struct {
	ID    string         `json:"id"`
	Match map[string]any `json:"match,omitempty"`
}

// DefaultPasses is how many passes a case runs when it does not say.
const DefaultPasses = 2

// ReadFile reads and checks a simulate file. Errors name the file, the
// line and the field.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a simulate file and checks every case, reporting every
// problem at once.
func Parse(path string, data []byte) (*File, error) {
	// Strict decoding through go-yaml gives unknown fields with lines.
	var probe fileProbe
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&probe); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	f := &File{Path: path}
	if err := sigsyaml.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var errs []error
	if f.Reconciler != nil && f.Reply != nil {
		errs = append(errs, fmt.Errorf("%s: set reconciler (a process to start) or reply (a recorded reply), not both", path))
	}
	if f.Reconciler != nil {
		for _, p := range f.Reconciler.Problems() {
			errs = append(errs, fmt.Errorf("%s: reconciler.%s", path, p))
		}
	}
	if f.Reply != nil {
		if err := checkReply(f.Reply, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: reply: %w", path, err))
		}
	}
	seen := map[string]bool{}
	for i, c := range f.Cases {
		where := fmt.Sprintf("%s: cases[%d]", path, i)
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name is required", where))
		} else {
			where = fmt.Sprintf("%s: case %q", path, c.Name)
		}
		if seen[c.Name] && c.Name != "" {
			errs = append(errs, fmt.Errorf("%s: the name is used twice; give each case its own", where))
		}
		seen[c.Name] = true
		if (c.CR == "") == (c.Object == nil) {
			errs = append(errs, fmt.Errorf("%s: set exactly one of cr (a file) or object (inline)", where))
		}
		errs = append(errs, checkPhase(where, "", c.Passes, c.Observe, c.Expect)...)
		if c.Reply != nil {
			if err := checkReply(c.Reply, false); err != nil {
				errs = append(errs, fmt.Errorf("%s: reply: %w", where, err))
			}
		}
		replies := c.Reply != nil || f.Reply != nil
		deleted := -1
		for j, st := range c.Steps {
			field := fmt.Sprintf("steps[%d].", j)
			if st.Patch != nil && st.Delete {
				errs = append(errs, fmt.Errorf("%s: %spatch and delete are both set; a step does one thing to the CR, so split it into two steps", where, field))
			}
			if deleted >= 0 && (st.Patch != nil || st.Delete) {
				errs = append(errs, fmt.Errorf("%s: %s: steps[%d] already deleted the CR; move this step before the delete", where, strings.TrimSuffix(field, "."), deleted))
			}
			if st.Delete && st.Patch == nil && deleted < 0 {
				deleted = j
			}
			if st.Reply != nil {
				if !replies {
					errs = append(errs, fmt.Errorf("%s: %sreply: the case calls a reconciler, not a recorded reply; give the case (or the file) a reply too", where, field))
				} else if err := checkReply(st.Reply, st.Delete); err != nil {
					errs = append(errs, fmt.Errorf("%s: %sreply: %w", where, field, err))
				}
			}
			errs = append(errs, checkPhase(where, field, st.Passes, st.Observe, st.Expect)...)
		}
	}
	if len(f.Cases) == 0 {
		errs = append(errs, fmt.Errorf("%s: no cases; add at least one under cases:", path))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// checkPhase checks the passes, observations and expectations of a case or
// a step; field prefixes their names.
func checkPhase(where, field string, passes int, observe []Observation, expect Expectation) []error {
	var errs []error
	if passes < 0 {
		errs = append(errs, fmt.Errorf("%s: %spasses must be at least 1", where, field))
	}
	if passes == 0 {
		passes = DefaultPasses
	}
	for j, o := range observe {
		if o.AfterPass < 1 || o.AfterPass >= passes {
			errs = append(errs, fmt.Errorf("%s: %sobserve[%d].afterPass must be between 1 and %d (passes-1), so that a pass follows it", where, field, j, passes-1))
		}
		if o.Child == "" {
			errs = append(errs, fmt.Errorf("%s: %sobserve[%d].child is required", where, field, j))
		}
	}
	for j, ch := range expect.Children {
		if ch.ID == "" {
			errs = append(errs, fmt.Errorf("%s: %sexpect.children[%d].id is required", where, field, j))
		}
	}
	return errs
}

// checkReply reads a recorded reply as the runtime would, as the answer to
// a finalizing request or not.
func checkReply(reply map[string]any, finalizing bool) error {
	_, err := sdk.DecodeResult(replyBody(reply), finalizing)
	return err
}

// replyBody is a recorded reply as served: JSON, with apiVersion and kind
// filled in when left out.
func replyBody(reply map[string]any) []byte {
	m := make(map[string]any, len(reply)+2)
	maps.Copy(m, reply)
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = sdk.APIVersion
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = sdk.KindResult
	}
	// Values decoded from YAML always encode.
	data, _ := json.Marshal(m)
	return data
}

// fileProbe mirrors File for go-yaml's strict field check.
type fileProbe struct {
	Reconciler *struct {
		Command      []string          `yaml:"command"`
		URL          string            `yaml:"url"`
		Env          map[string]string `yaml:"env"`
		Dir          string            `yaml:"dir"`
		StartTimeout string            `yaml:"startTimeout"`
	} `yaml:"reconciler"`
	Reply map[string]any `yaml:"reply"`
	Cases []struct {
		Name    string           `yaml:"name"`
		CR      string           `yaml:"cr"`
		Object  map[string]any   `yaml:"object"`
		Objects []map[string]any `yaml:"objects"`
		Passes  int              `yaml:"passes"`
		Observe []observeProbe   `yaml:"observe"`
		Expect  expectProbe      `yaml:"expect"`
		Reply   map[string]any   `yaml:"reply"`
		Steps   []struct {
			Patch   map[string]any `yaml:"patch"`
			Delete  bool           `yaml:"delete"`
			Reply   map[string]any `yaml:"reply"`
			Passes  int            `yaml:"passes"`
			Observe []observeProbe `yaml:"observe"`
			Expect  expectProbe    `yaml:"expect"`
		} `yaml:"steps"`
	} `yaml:"cases"`
}

type observeProbe struct {
	AfterPass int            `yaml:"afterPass"`
	Child     string         `yaml:"child"`
	Status    map[string]any `yaml:"status"`
}

type expectProbe struct {
	Children []struct {
		ID    string         `yaml:"id"`
		Match map[string]any `yaml:"match"`
	} `yaml:"children"`
	Absent []string       `yaml:"absent"`
	Status map[string]any `yaml:"status"`
	Errors []string       `yaml:"errors"`
	Gone   bool           `yaml:"gone"`
}

// LoadCR returns a case's custom resource, read from its file relative to
// the simulate file, or inline.
func (f *File) LoadCR(c *Case) (*unstructured.Unstructured, error) {
	if c.Object != nil {
		return &unstructured.Unstructured{Object: deepCopy(c.Object)}, nil
	}
	path := c.CR
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(f.Path), path)
	}
	return ReadObject(path)
}

// ReadObject reads one Kubernetes object from a YAML file.
func ReadObject(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := sigsyaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
		return nil, fmt.Errorf("%s: not a Kubernetes object: apiVersion, kind and metadata.name are required", path)
	}
	return u, nil
}

func deepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
