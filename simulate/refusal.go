package simulate

import (
	"errors"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// refused turns the store's refusal of a custom resource read from path (a
// case's cr: file) into diagnostics at the fields of that file, with what
// to do: a CR the API server would refuse fails the case as it would fail
// kubectl apply. Any other error is returned as it is.
func refused(path string, bp *ir.Blueprint, err error) error {
	var unknown *UnknownFieldsError
	var status apierrors.APIStatus
	isInvalid := errors.As(err, &status) && apierrors.IsInvalid(err)
	if !errors.As(err, &unknown) && !isInvalid {
		return err
	}
	data, rerr := inputfile.Read(path)
	if rerr != nil {
		return err
	}
	var diags diag.List
	r := yamlpos.NewReader(path, &diags)
	root := r.Parse(data, "")
	if root == nil {
		return err
	}
	if unknown != nil {
		for _, p := range unknown.Paths {
			hint := "remove it, or declare it in the CRD's schema"
			if s, ok := suggest.Closest(lastField(p), siblings(bp, p)); ok {
				hint = "did you mean " + parentPath(p) + s + "?"
			}
			r.Errorf(yamlpos.At(root, p, true), diag.UnknownField, hint, "%s: unknown field %s: the CRD does not declare it, and the API server refuses it", unknown.Kind, p)
		}
		return diags.Err()
	}
	for _, c := range status.Status().Details.Causes {
		at := root
		if c.Field != "" {
			at = yamlpos.At(root, c.Field, c.Type == metav1.CauseTypeFieldValueRequired)
		}
		hint := "change it to a value the CRD's schema allows"
		if c.Type == metav1.CauseTypeFieldValueRequired {
			hint = "add it: the CRD's schema requires it"
		}
		msg := c.Message
		if c.Field != "" && !strings.HasPrefix(msg, c.Field) {
			msg = c.Field + ": " + msg
		}
		r.Errorf(at, diag.InvalidValue, hint, "%s is invalid: %s", bp.Resource.Kind, msg)
	}
	if e := diags.Err(); e != nil {
		return e
	}
	return err
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
