// Package cli is the inrun command line: its commands, flags and help
// texts, each a thin call into the packages that do the work.
//
// Command inrun (cmd/inrun) is nothing but a call to Main. It is a package
// of its own so that an inrun with Go modules compiled in can be built: the
// builder (inrun build --with) generates a main package that imports the
// modules, whose init functions register their reconcilers and hooks in
// package components, and then calls Main.
package cli
