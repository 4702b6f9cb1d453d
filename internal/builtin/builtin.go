// Package builtin holds the kinds every API server serves, as Go types:
// client-go's, and apiextensions.k8s.io/v1's CustomResourceDefinition,
// which client-go's scheme leaves out. The scheme also knows versions the
// API server no longer serves (apps/v1beta1): Removed says which.
//
// The compiler, the expression environment and the kro importer read this
// scheme rather than client-go's global one, which other packages may add
// to when they are linked in (controller-runtime's envtest adds
// apiextensions.k8s.io/v1 to it): what is built in must not depend on what
// else a binary links.
package builtin

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Scheme knows every built-in kind. It is only read.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
