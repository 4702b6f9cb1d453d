// Command inrun turns a Blueprint into a running Kubernetes operator.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	// Go compiled in that registered badly (a name twice, a bad name) is
	// reported before anything runs, all of it.
	if err := compiledIn.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "Error: the Go code compiled into this inrun registers badly:", err)
		os.Exit(1)
	}
	if err := newRootCommand().Execute(); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "Error:", err)
		}
		os.Exit(exitCode(err))
	}
}
