// Command inrun turns a Blueprint into a running Kubernetes operator.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}
