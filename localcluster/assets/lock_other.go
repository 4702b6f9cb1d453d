//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package assets

import "context"

// lockDir does nothing where flock(2) is missing: concurrent builds into
// one directory then race, and the last one wins.
func lockDir(context.Context, string, *printer) (func(), error) {
	return func() {}, nil
}
