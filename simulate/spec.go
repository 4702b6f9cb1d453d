package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// File is a test/simulate.yaml: cases run against one Blueprint. The format
// is documented in docs/simulate.md.
type File struct {
	Cases []Case `json:"cases"`

	// Path is where the file was read from.
	Path string `json:"-"`
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
		if c.Passes < 0 {
			errs = append(errs, fmt.Errorf("%s: passes must be at least 1", where))
		}
		passes := c.Passes
		if passes == 0 {
			passes = DefaultPasses
		}
		for j, o := range c.Observe {
			if o.AfterPass < 1 || o.AfterPass >= passes {
				errs = append(errs, fmt.Errorf("%s: observe[%d].afterPass must be between 1 and %d (passes-1), so that a pass follows it", where, j, passes-1))
			}
			if o.Child == "" {
				errs = append(errs, fmt.Errorf("%s: observe[%d].child is required", where, j))
			}
		}
		for j, ch := range c.Expect.Children {
			if ch.ID == "" {
				errs = append(errs, fmt.Errorf("%s: expect.children[%d].id is required", where, j))
			}
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

// fileProbe mirrors File for go-yaml's strict field check.
type fileProbe struct {
	Cases []struct {
		Name    string           `yaml:"name"`
		CR      string           `yaml:"cr"`
		Object  map[string]any   `yaml:"object"`
		Objects []map[string]any `yaml:"objects"`
		Passes  int              `yaml:"passes"`
		Observe []struct {
			AfterPass int            `yaml:"afterPass"`
			Child     string         `yaml:"child"`
			Status    map[string]any `yaml:"status"`
		} `yaml:"observe"`
		Expect struct {
			Children []struct {
				ID    string         `yaml:"id"`
				Match map[string]any `yaml:"match"`
			} `yaml:"children"`
			Absent []string       `yaml:"absent"`
			Status map[string]any `yaml:"status"`
			Errors []string       `yaml:"errors"`
		} `yaml:"expect"`
	} `yaml:"cases"`
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
