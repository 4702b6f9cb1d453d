package proto

import (
	"reflect"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/utils/ptr"
)

func TestProto(t *testing.T) {
	v1props := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"}, "image": {Type: "string"}}},
	}}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1props, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	decl := model.SchemaDeclType(s, true).MaybeAssignTypeName("website")
	provider := apiservercel.NewDeclTypeProvider(decl)
	base, err := cel.NewEnv(cel.OptionalTypes(), ext.Strings(), library.Quantity(), library.URLs(), library.Regex(), library.Lists())
	if err != nil {
		t.Fatal(err)
	}
	opts, err := provider.EnvOptions(base.CELTypeProvider())
	if err != nil {
		t.Fatal(err)
	}
	env, err := base.Extend(opts...)
	if err != nil {
		t.Fatal(err)
	}
	env, err = env.Extend(ext.NativeTypes(reflect.TypeFor[appsv1.Deployment](), reflect.TypeFor[corev1.Service](), ext.ParseStructTag("json")),
		cel.Variable("self", decl.CelType()),
		cel.Variable("deployment", cel.ObjectType("v1.Deployment")),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"deployment.status.readyReplicas == deployment.spec.replicas",
		"deployment.status.readyReplicaz",
		"self.spec.replicas + 1",
		"self.spec.replcas",
		"deployment.metadata.name + '-x'",
		"deployment.metadata.labels",
		"deployment.spec.template.spec.containers[0].image",
		"deployment.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
		"deployment.kind",
		"deployment.metadata.creationTimestamp",
		"deployment.spec.strategy.rollingUpdate.maxSurge",
	} {
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			t.Logf("%s => ERR %v", src, iss.Err())
			continue
		}
		t.Logf("%s => %v", src, ast.OutputType())
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		d.Name = "web"
		d.Spec.Replicas = ptr.To[int32](2)
		d.Status.ReadyReplicas = 2
		out, _, err := prg.Eval(map[string]any{"deployment": d, "self": map[string]any{"spec": map[string]any{"replicas": int64(3)}}})
		t.Logf("   eval => %v %v", out, err)
	}
	_ = env
}
