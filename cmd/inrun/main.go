// Command inrun turns a Blueprint into a running Kubernetes operator.
package main

import "github.com/inrun/inrun/cli"

func main() { cli.Main() }
