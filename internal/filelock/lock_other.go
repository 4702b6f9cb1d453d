//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filelock

import "context"

// Lock does nothing where flock(2) is missing.
func Lock(context.Context, string, func()) (func(), error) {
	return func() {}, nil
}
