package ir

import (
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Marshal encodes a compiled Blueprint as JSON, checked expressions
// included, so that a program can run it without the compiler: inrun build
// embeds it in the operators it generates. The same inputs give the same
// bytes.
func Marshal(bp *Blueprint) ([]byte, error) {
	return json.MarshalIndent(bp, "", " ")
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(data []byte) (*Blueprint, error) {
	bp := &Blueprint{}
	if err := json.Unmarshal(data, bp); err != nil {
		return nil, fmt.Errorf("decoding the Blueprint's IR: %w", err)
	}
	return bp, nil
}

// MarshalUsed encodes the Blueprints bp uses, directly or not (WithUsed
// without bp), for UnmarshalWithUsed: inrun build embeds them in an
// operator's tests, which run them beside the operator, as inrun run does.
// Nil when bp uses none.
func MarshalUsed(bp *Blueprint) ([]byte, error) {
	all := WithUsed([]*Blueprint{bp})
	if len(all) == 1 {
		return nil, nil
	}
	return json.MarshalIndent(all[:len(all)-1], "", " ")
}

// UnmarshalWithUsed decodes a Blueprint (Marshal's) and those it uses
// (MarshalUsed's), and links every Use of a Blueprint to the used one it
// names (Use.Compiled), by name and kind.
func UnmarshalWithUsed(data, used []byte) (*Blueprint, error) {
	bp, err := Unmarshal(data)
	if err != nil {
		return nil, err
	}
	var list []*Blueprint
	if err := json.Unmarshal(used, &list); err != nil {
		return nil, fmt.Errorf("decoding the IR of the Blueprints it uses: %w", err)
	}
	for _, b := range append([]*Blueprint{bp}, list...) {
		for _, u := range b.Uses {
			if u.Blueprint == "" {
				continue
			}
			for _, l := range list {
				if l.Name == u.Blueprint && l.Resource.GroupVersionKind == u.GroupVersionKind {
					u.Compiled = l
				}
			}
			if u.Compiled == nil {
				return nil, fmt.Errorf("the Blueprint %s uses %s, whose IR is missing", b.Name, u.Blueprint)
			}
		}
	}
	return bp, nil
}

// literal is a Literal's JSON form: exactly one field is set, so that an
// integer stays an integer.
type literal struct {
	Bool   *bool    `json:"bool,omitempty"`
	Int    *int64   `json:"int,omitempty,string"`
	Float  *float64 `json:"float,omitempty"`
	String *string  `json:"string,omitempty"`
}

// MarshalJSON encodes v with its Literal typed.
func (v *Value) MarshalJSON() ([]byte, error) {
	type plain Value
	out := struct {
		*plain
		Literal *literal `json:",omitempty"`
	}{plain: (*plain)(v)}
	if v.Kind == Literal {
		out.Literal = &literal{}
		switch t := v.Literal.(type) {
		case bool:
			out.Literal.Bool = &t
		case int64:
			out.Literal.Int = &t
		case float64:
			out.Literal.Float = &t
		case string:
			out.Literal.String = &t
		default:
			return nil, fmt.Errorf("%s: literal of type %T", v.Pos, v.Literal)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes what MarshalJSON encoded.
func (v *Value) UnmarshalJSON(data []byte) error {
	type plain Value
	in := struct {
		*plain
		Literal *literal
	}{plain: (*plain)(v)}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	v.Literal = nil
	if l := in.Literal; l != nil {
		switch {
		case l.Bool != nil:
			v.Literal = *l.Bool
		case l.Int != nil:
			v.Literal = *l.Int
		case l.Float != nil:
			v.Literal = *l.Float
		case l.String != nil:
			v.Literal = *l.String
		}
	}
	return nil
}

// MarshalJSON encodes x with its checked expression as CEL's CheckedExpr
// protobuf, deterministically.
func (x *Expr) MarshalJSON() ([]byte, error) {
	type plain Expr
	out := struct {
		*plain
		Checked []byte `json:",omitempty"`
	}{plain: (*plain)(x)}
	if x.Checked != nil {
		ce, err := cel.AstToCheckedExpr(x.Checked)
		if err != nil {
			return nil, fmt.Errorf("%s: ${%s}: %w", x.Pos, x.Source, err)
		}
		if out.Checked, err = (proto.MarshalOptions{Deterministic: true}).Marshal(ce); err != nil {
			return nil, fmt.Errorf("%s: ${%s}: %w", x.Pos, x.Source, err)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes what MarshalJSON encoded.
func (x *Expr) UnmarshalJSON(data []byte) error {
	type plain Expr
	in := struct {
		*plain
		Checked []byte
	}{plain: (*plain)(x)}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	x.Checked = nil
	if len(in.Checked) > 0 {
		ce := &exprpb.CheckedExpr{}
		if err := proto.Unmarshal(in.Checked, ce); err != nil {
			return fmt.Errorf("%s: ${%s}: %w", x.Pos, x.Source, err)
		}
		x.Checked = cel.CheckedExprToAst(ce)
	}
	return nil
}

// MarshalCRD encodes a CustomResourceDefinition as the YAML manifest
// kubectl applies: no status or creationTimestamp, keys sorted, so the same
// CRD always gives the same bytes. inrun crd prints a generated CRD with
// it, and inrun build writes it into config/crd.
func MarshalCRD(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	raw, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(obj)
}
