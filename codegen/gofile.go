package codegen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The import paths generated code uses.
const (
	pkgIR           = "github.com/inrun/inrun/ir"
	pkgExpr         = "github.com/inrun/inrun/expr"
	pkgController   = "github.com/inrun/inrun/runtime-lib/controller"
	pkgReconciler   = "github.com/inrun/inrun/runtime-lib/reconciler"
	pkgTyped        = "github.com/inrun/inrun/runtime-lib/typed"
	pkgOperatorTest = "github.com/inrun/inrun/conformance/operatortest"
	pkgClusterTest  = "github.com/inrun/inrun/localcluster/clustertest"
	pkgLocalCluster = "github.com/inrun/inrun/localcluster"
	pkgCtrl         = "sigs.k8s.io/controller-runtime"
	pkgPtr          = "k8s.io/utils/ptr"
	pkgUnstructured = "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// goFile renders f, gofmt-clean, at name.
func (p *project) goFile(name string, f *jen.File) {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		p.errs = append(p.errs, fmt.Errorf("generating %s: %w", name, err))
		return
	}
	out, err := formatImports(buf.Bytes(), p.Module)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("formatting %s: %w", name, err))
		return
	}
	p.Files[name] = out
}

// newFile starts a generated Go file with kubebuilder's import names.
func newFile(pkgPath, name string) *jen.File {
	f := jen.NewFilePathName(pkgPath, name)
	f.HeaderComment(Header)
	for path, alias := range importAliases() {
		f.ImportAlias(path, alias)
	}
	return f
}

// importAliases names the k8s.io/api packages as kubebuilder projects do
// (appsv1, corev1) and the rest of the usual suspects.
func importAliases() map[string]string {
	out := map[string]string{
		pkgMetav1:                              "metav1",
		pkgRuntime:                             "runtime",
		pkgUnstructured:                        "unstructured",
		pkgApiext:                              "apiextensionsv1",
		pkgCtrl:                                "ctrl",
		"k8s.io/client-go/kubernetes/scheme":   "clientgoscheme",
		"k8s.io/apimachinery/pkg/util/runtime": "utilruntime",
		"sigs.k8s.io/controller-runtime/pkg/metrics/server": "metricsserver",
		pkgController: "runtimecontroller",
		"sigs.k8s.io/controller-runtime/pkg/log/zap": "zap",
		"sigs.k8s.io/controller-runtime/pkg/healthz": "healthz",
		"sigs.k8s.io/controller-runtime/pkg/client":  "client",
		pkgOperatorTest: "operatortest",
		pkgClusterTest:  "clustertest",
	}
	for _, t := range clientgoscheme.Scheme.AllKnownTypes() {
		p := t.PkgPath()
		if rest, ok := strings.CutPrefix(p, "k8s.io/api/"); ok {
			group, version, _ := strings.Cut(rest, "/")
			out[p] = packageAlias(group, version)
		}
	}
	return out
}

// block is a composite literal's braces around items, one per line.
func block(items []jen.Code) *jen.Statement {
	if len(items) == 0 {
		return jen.Values()
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, items...)
}
