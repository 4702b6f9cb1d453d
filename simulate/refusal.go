package simulate

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// refused turns the store's refusal of a custom resource read from path (a
// case's cr: file, render's CR) into diagnostics at the fields of that
// file, with what to do, its unknown fields and invalid values together
// (CheckCR): a CR the API server would refuse fails as it would fail
// kubectl apply. Any other error is returned as it is.
func refused(path string, bp *ir.Blueprint, err error) error {
	var unknown *UnknownFieldsError
	if !errors.As(err, &unknown) && !apierrors.IsInvalid(err) {
		return err
	}
	cr, root, problems := readObject(path)
	if len(problems) > 0 {
		return err
	}
	var diags diag.List
	CheckCR(bp, yamlpos.NewReader(path, &diags), root, "", "", cr)
	if len(diags) == 0 {
		return err
	}
	return diags.Err()
}

// refusalAt reports the store's refusal err of a custom resource whose
// YAML is root through r, each unknown field and invalid value at its
// node, every message after label and every hint followed by more. It
// reports false, and nothing, for any other error.
func refusalAt(r *yamlpos.Reader, root *yaml.Node, label, more string, bp *ir.Blueprint, err error) bool {
	var unknown *UnknownFieldsError
	var status apierrors.APIStatus
	isInvalid := errors.As(err, &status) && apierrors.IsInvalid(err)
	if !errors.As(err, &unknown) && !isInvalid {
		return false
	}
	if unknown != nil {
		for _, p := range unknown.Paths {
			hint := "remove it, or declare it in the CRD's schema"
			if s, ok := suggest.Closest(lastField(p), siblings(bp, p)); ok {
				hint = "did you mean " + parentPath(p) + s + "?"
			}
			r.Errorf(yamlpos.At(root, p, true), diag.UnknownField, hint+more, "%s%s: unknown field %s: the CRD does not declare it, and the API server refuses it", label, unknown.Kind, p)
		}
		return true
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if len(causes) > 1 && strings.Contains(c.Message, rulesNotChecked) {
			continue // the others say what to correct
		}
		at := root
		if c.Field != "" {
			at = yamlpos.At(root, c.Field, c.Type == metav1.CauseTypeFieldValueRequired)
		}
		if m := wrongTypeRE.FindStringSubmatch(c.Message); m != nil && c.Field != "" {
			// The API server names the value's type, not the value.
			r.Errorf(at, diag.WrongType, "write "+article(m[1])+more, "%s%s is invalid: %s must be of type %s, not %s",
				label, bp.Resource.Kind, c.Field, m[1], yamlpos.Describe(at))
			continue
		}
		hint := "change it to a value the CRD's schema allows"
		if c.Type == metav1.CauseTypeFieldValueRequired {
			hint = "add it: the CRD's schema requires it"
		}
		msg := c.Message
		if c.Field != "" && !strings.HasPrefix(msg, c.Field) {
			msg = c.Field + ": " + msg
		}
		r.Errorf(at, diag.InvalidValue, hint+more, "%s%s is invalid: %s", label, bp.Resource.Kind, msg)
	}
	return true
}

// rulesNotChecked is how the API server says it did not run a CRD's
// x-kubernetes-validations on an object its schema refuses.
const rulesNotChecked = "some validation rules were not checked because the object was invalid"

// wrongTypeRE matches the schema validator's refusal of a value of the
// wrong type: `spec.replicas in body must be of type integer: "string"`.
var wrongTypeRE = regexp.MustCompile(`in body must be of type (\w+): "\w+"$`)

// article is an OpenAPI type with its article: "an integer", "a string".
func article(typ string) string {
	if strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// siblings are the fields the CRD's schema declares beside the last one of
// path.
func siblings(bp *ir.Blueprint, path string) []string {
	s := bp.Resource.Schema
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		if s == nil {
			return nil
		}
		if i := strings.IndexByte(p, '['); i >= 0 {
			p = p[:i]
			next, ok := s.Properties[p]
			if !ok || next.Items == nil || next.Items.Schema == nil {
				return nil
			}
			s = next.Items.Schema
			continue
		}
		next, ok := s.Properties[p]
		if !ok {
			return nil
		}
		s = &next
	}
	if s == nil {
		return nil
	}
	var names []string
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func lastField(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// parentPath is path up to and with the dot before its last field.
func parentPath(path string) string {
	return path[:strings.LastIndexByte(path, '.')+1]
}
