package compiler_test

import (
	"testing"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
)

// BenchmarkLoad measures what a runtime does with a Blueprint before its
// first reconcile: read it, compile it (which parses and type-checks each
// expression, once) and plan the programs of every expression from the
// checked forms the compiler left in the IR. docs/performance.md has the
// figures, beside those of the version that parsed every expression again
// in expr.Compile, and twice more with reconcile.api.
func BenchmarkLoad(b *testing.B) {
	for _, tt := range []struct{ name, file string }{
		{"website", "../packs/website/blueprint.yaml"},
		{"remote", "../packs/remote/blueprint.yaml"},
		{"api", "../runtime-lib/reconciler/testdata/api.yaml"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				bp, err := compiler.CompileFile(tt.file, compiler.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := expr.Compile(bp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
