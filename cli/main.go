package cli

import (
	"errors"
	"fmt"
	"os"
)

// Main runs the inrun command line on os.Args and exits. An inrun with Go
// modules compiled in is a main package that imports them for their
// registrations and calls Main (see package builder).
func Main() {
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
