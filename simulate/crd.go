package simulate

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/inrun/inrun/ir"
)

// crdRules does to the Blueprint's custom resource what the API server's
// handler for its CRD does on every write: unknown fields pruned (or
// refused, where the write asks for strict validation, as kubectl and
// server-side apply do), defaults filled in, and the object validated
// against the structural schema, its x-kubernetes-validations rules and
// its list types. A case then fails in memory where it would on a cluster.
type crdRules struct {
	gvk        ir.Resource
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	status     validation.SchemaValidator
	cel        *cel.Validator
}

// newCRDRules returns the rules for bp's CRD, or nil when the Blueprint
// names an installed CRD whose schema it does not have.
func newCRDRules(bp *ir.Blueprint) (*crdRules, error) {
	if bp.Resource.Schema == nil {
		return nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(bp.Resource.Schema, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the CRD's schema is not structural: %w", err)
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	r := &crdRules{gvk: bp.Resource, structural: s, validator: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	if st, ok := internal.Properties["status"]; ok {
		if r.status, _, err = validation.NewSchemaValidator(&st); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// unknownFields returns the paths of obj's fields the schema does not
// declare, as the API server names them (spec.replicaz).
func (r *crdRules) unknownFields(obj map[string]any) []string {
	cp := (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
	return pruning.PruneWithOptions(cp, r.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// strict refuses obj when it sets a field the schema does not declare, as
// the API server does for kubectl, whose writes ask for strict field
// validation.
func (r *crdRules) strict(obj *unstructured.Unstructured) error {
	unknown := r.unknownFields(obj.Object)
	if len(unknown) == 0 {
		return nil
	}
	return &UnknownFieldsError{Kind: r.gvk.Kind, Name: obj.GetName(), Paths: unknown}
}

// UnknownFieldsError is a write of the custom resource refused for fields
// its CRD does not declare.
type UnknownFieldsError struct {
	Kind, Name string
	// Paths are the unknown fields, such as spec.replicaz, sorted.
	Paths []string
}

func (e *UnknownFieldsError) Error() string {
	q := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		q[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%s %q: strict decoding error: unknown field %s (the CRD does not declare it; the API server refuses it too)", e.Kind, e.Name, strings.Join(q, ", unknown field "))
}

// admit prunes and defaults obj as the API server stores it, and returns
// what the API server would refuse about it: everything when old is nil (a
// create), else the update from old; with statusOnly, only what a write to
// the status subresource is checked for.
func (r *crdRules) admit(ctx context.Context, obj, old *unstructured.Unstructured, statusOnly bool) fieldpath.ErrorList {
	pruning.Prune(obj.Object, r.structural, true)
	defaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, r.structural)
	defaulting.Default(obj.Object, r.structural)

	var errs fieldpath.ErrorList
	if !statusOnly {
		errs = append(errs, r.validateMeta(obj)...)
		errs = append(errs, validation.ValidateCustomResource(nil, obj.Object, r.validator)...)
	} else if status, ok := obj.Object["status"]; ok && r.status != nil {
		errs = append(errs, validation.ValidateCustomResource(fieldpath.NewPath("status"), status, r.status)...)
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj.Object, r.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, r.structural, obj.Object)...)
	// The rules run beside the schema's errors, unless one of those would
	// make a rule misread the object (the API server's hasBlockingErr).
	if blocked := blockingErr(errs); r.cel == nil {
		// A schema without rules has no validator.
	} else if blocked != nil {
		errs = append(errs, blocked)
	} else {
		var oldObj any
		if old != nil {
			oldObj = old.Object
		}
		celErrs, _ := r.cel.Validate(ctx, nil, r.structural, obj.Object, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// blockingErr is the API server's refusal to run the rules over an object
// with a missing, oversized, unsupported or mistyped field.
func blockingErr(errs fieldpath.ErrorList) *fieldpath.Error {
	for _, err := range errs {
		switch err.Type {
		case fieldpath.ErrorTypeNotSupported, fieldpath.ErrorTypeRequired, fieldpath.ErrorTypeTooLong, fieldpath.ErrorTypeTooMany, fieldpath.ErrorTypeTypeInvalid:
			return fieldpath.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// validateMeta checks the name, namespace, labels and annotations as the
// API server does for every object.
func (r *crdRules) validateMeta(obj *unstructured.Unstructured) fieldpath.ErrorList {
	var errs fieldpath.ErrorList
	path := fieldpath.NewPath("metadata")
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(obj.GetName(), false) {
		errs = append(errs, fieldpath.Invalid(path.Child("name"), obj.GetName(), msg))
	}
	errs = append(errs, metav1validation.ValidateLabels(obj.GetLabels(), path.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(obj.GetAnnotations(), path.Child("annotations"))...)
	return errs
}

// invalid is the API server's answer to a write it refuses: 422 with
// every field error.
func (r *crdRules) invalid(name string, errs fieldpath.ErrorList) error {
	return apierrors.NewInvalid(r.gvk.GroupVersionKind.GroupKind(), name, errs)
}

// unknownFieldsError is server-side apply's answer to fields the schema
// does not declare, the error an apply on a cluster gets.
func (r *crdRules) unknownFieldsError(name string, paths []string) error {
	var errs fieldpath.ErrorList
	for _, p := range paths {
		errs = append(errs, fieldpath.Invalid(fieldpath.NewPath(p), nil, "field not declared in schema"))
	}
	return fmt.Errorf("failed to create typed patch object (%s; %s): %s", strings.TrimPrefix(r.gvk.GroupVersionKind.String(), "/"), name, errs.ToAggregate().Error())
}
