package compiler

import (
	"context"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// crdRefusals returns what the API server refuses in crd when it is
// created: apiextensions' own validation, after the API server's
// defaults. It is what the rest of check does not see: the estimated cost
// of the x-kubernetes-validations rules against the API server's budget,
// list-map keys, names, versions. Paths are crd's (spec.versions[i]...),
// as the file is written: validation names a schema that every version
// shares spec.validation, which it is not in a v1 manifest.
func crdRefusals(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	v1 := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	fes := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal)
	for _, fe := range fes {
		for hoisted, per := range map[string]string{
			"spec.validation.":              "spec.versions[0].schema.",
			"spec.subresources":             "spec.versions[0].subresources",
			"spec.additionalPrinterColumns": "spec.versions[0].additionalPrinterColumns",
		} {
			if rest, ok := strings.CutPrefix(fe.Field, hoisted); ok {
				fe.Field = per + rest
			}
		}
	}
	return fes
}
