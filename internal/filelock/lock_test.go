//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filelock_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/inrun/inrun/internal/filelock"
)

// TestLock: a second Lock of the file waits, says so once, and gets the
// lock when the first is released; a cancelled wait returns the context's
// error.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := filelock.Lock(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := filelock.Lock(ctx, path, cancel) // cancels once it waits
		cancelled <- err
	}()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait = %v, want context.Canceled", err)
	}

	waiting := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		unlock2, err := filelock.Lock(context.Background(), path, func() { close(waiting) })
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	<-waiting
	select {
	case err := <-got:
		t.Fatalf("the second Lock returned (%v) while the first held it", err)
	default:
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
