// Package ir holds Inrun's intermediate representation: the typed, validated
// form of a Blueprint.
//
// The IR is the one contract between the front end (packages load and
// compiler) and the two back ends (the interpreting runtime in runtime-lib
// and the Go generator in codegen). It is plain data: no cluster client and
// no behaviour beyond small accessors. Each expression carries its checked
// CEL AST (Expr.Checked), so a back end plans programs or lowers Go from it
// and never parses CEL text again. Once the compiler returns a Blueprint it
// is never mutated; back ends derive their own state from it, and
// WithRemoteURL and WithFiles return changed copies.
//
// Marshal and Unmarshal carry a compiled Blueprint, checked expressions
// included, into the operators inrun build generates, which therefore run
// without the compiler. A Blueprint's Uses record the kinds it builds on;
// a used Blueprint itself (Use.Compiled) is not part of its encoding, and
// WithUsed lists what a program that runs Blueprints runs.
package ir
