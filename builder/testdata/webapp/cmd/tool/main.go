// Command tool is a main package of the module, which the builder leaves
// out: a main package cannot be imported.
package main

func main() {}
