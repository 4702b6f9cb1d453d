// Package ir holds Inrun's intermediate representation: the typed, validated
// form of a Blueprint.
//
// The IR is the one contract between the front end (package compiler) and the
// two back ends (the interpreting runtime in runtime-lib and the Go generator in
// codegen). It is plain data: it holds no cluster client, no compiled CEL
// program and no behaviour beyond small accessors. Once the compiler returns a
// Blueprint it is never mutated; back ends derive their own state from it.
package ir
