package simulate

import (
	"context"
	"fmt"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// Load reads the simulate file at path and checks it against the
// Blueprint before any case runs, reporting every problem at once: the
// file's own (Parse), what its cases name of the Blueprint (CheckFile),
// and each case's custom resource that the API server would refuse when
// the case does not expect it to (its unknown fields and its invalid
// values together, where the API server reports the first alone), at its
// place in the CR's file or in the case's object.
func (s *Simulator) Load(path string) (*File, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, unreadable(path, "the simulate file", err)
	}
	var diags diag.List
	r := yamlpos.NewReader(path, &diags)
	r.What = "the simulate file"
	f := (&parser{Reader: r}).file(data)
	if f != nil {
		s.checkRefs(f, &diags)
		s.checkCRs(f, r, &diags)
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// crHint follows the hint of a CR's problem found before the cases run:
// the case may mean the CR to be refused.
const crHint = " (or, to test the refusal, expect it: expect: {refused: [...]})"

// checkCRs adds to diags what the API server would refuse of each case's
// custom resource, but those of cases that expect a refusal: a file's
// problems once however many cases name it, an inline object's under its
// case, through r.
func (s *Simulator) checkCRs(f *File, r *yamlpos.Reader, diags *diag.List) {
	rules, err := newCRDRules(s.bp)
	if err != nil {
		return // NewStore says so when a case runs
	}
	checked := map[string]bool{}
	for i := range f.Cases {
		c := &f.Cases[i]
		if len(c.Expect.Refused) > 0 {
			continue
		}
		switch {
		case c.Object != nil && c.objectNode != nil:
			label := "case " + strconv.Quote(c.Name) + ": object: "
			checkCR(s.bp, rules, r, c.objectNode, label, crHint, &unstructured.Unstructured{Object: deepCopy(c.Object)})
		case c.CR != "" && !checked[f.crPath(c)]:
			path := f.crPath(c)
			checked[path] = true
			cr, root, cdiags := readObject(path)
			if len(cdiags) > 0 {
				*diags = append(*diags, cdiags...)
				continue
			}
			fr := yamlpos.NewReader(path, diags)
			checkCR(s.bp, rules, fr, root, "", crHint, cr)
		}
	}
}

// CheckCR reports through r, at the fields of root (cr's YAML), what the
// API server would refuse of cr, a custom resource of bp, as a create: its
// kind when it is not bp's, its unknown fields and its invalid values, all
// at once, where the API server stops at the unknown fields. label
// precedes each message and more follows each hint.
func CheckCR(bp *ir.Blueprint, r *yamlpos.Reader, root *yaml.Node, label, more string, cr *unstructured.Unstructured) {
	rules, err := newCRDRules(bp)
	if err != nil {
		return // the store says so when the CR is created
	}
	checkCR(bp, rules, r, root, label, more, cr)
}

func checkCR(bp *ir.Blueprint, rules *crdRules, r *yamlpos.Reader, root *yaml.Node, label, more string, cr *unstructured.Unstructured) {
	if gvk := cr.GroupVersionKind(); gvk != bp.Resource.GroupVersionKind {
		want := bp.Resource.GroupVersionKind
		r.Errorf(yamlpos.At(root, "kind", false), diag.InvalidValue, fmt.Sprintf("write apiVersion: %s and kind: %s", want.GroupVersion(), want.Kind),
			"%sthe CR is a %s, but Blueprint %s reconciles %s", label, ir.FormatKind(gvk), bp.Name, ir.FormatKind(want))
		return
	}
	if rules == nil {
		return // an installed CRD whose schema the Blueprint does not have
	}
	unknown, invalid := rules.refusals(context.Background(), bp, cr)
	for _, err := range []error{unknown, invalid} {
		if err != nil && !refusalAt(r, root, label, more, bp, err) {
			r.Errorf(root, diag.InvalidValue, "", "%s%v", label, err)
		}
	}
}

// refusals returns what the API server refuses of cr as a create, both at
// once: its unknown fields (an *UnknownFieldsError) and, those aside, its
// invalid values (an Invalid error); each nil when there are none.
func (r *crdRules) refusals(ctx context.Context, bp *ir.Blueprint, cr *unstructured.Unstructured) (unknown, invalid error) {
	cr = cr.DeepCopy()
	if bp.Resource.Namespaced && cr.GetNamespace() == "" {
		cr.SetNamespace("default")
	}
	if bp.Resource.StatusSubresource {
		unstructured.RemoveNestedField(cr.Object, "status")
	}
	unknown = r.strict(cr)
	if errs := r.admit(ctx, cr, nil, false); len(errs) > 0 {
		invalid = r.invalid(cr.GetName(), errs)
	}
	return unknown, invalid
}

// readObject reads a Kubernetes object's file as ReadObject does, with its
// YAML, for positions; or the file's problems.
func readObject(path string) (*unstructured.Unstructured, *yaml.Node, diag.List) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, nil, diag.All(unreadable(path, "the object's file", err))
	}
	var diags diag.List
	r := yamlpos.NewReader(path, &diags)
	r.What = "the object's file"
	root := r.Parse(data, "write a Kubernetes object with apiVersion, kind and metadata.name")
	var obj map[string]any
	switch {
	case root == nil:
	case yamlpos.Resolve(root).Kind == yaml.MappingNode:
		// What is read despite a problem is checked too.
		v, _ := r.Value(root, "")
		obj, _ = v.(map[string]any)
	default:
		r.Object(root, "")
	}
	u := &unstructured.Unstructured{Object: obj}
	if obj != nil {
		for _, f := range []struct{ path, value string }{
			{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()},
		} {
			if f.value == "" {
				r.Errorf(root, diag.MissingField, "a Kubernetes object needs apiVersion, kind and metadata.name", "%s is required", f.path)
			}
		}
	}
	if len(diags) > 0 {
		return nil, nil, diags
	}
	return u, root, nil
}
