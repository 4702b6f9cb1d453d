// Package contain runs Go code compiled into inrun (reconcilers, hooks)
// so that its failures stay its own: a panic becomes an error, and a call
// that does not return in time is abandoned.
package contain

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// ErrTimeout is returned when fn did not return within the timeout.
var ErrTimeout = errors.New("timed out")

// PanicError is a panic of fn.
type PanicError struct {
	Value any
	// Stack is the goroutine's stack where it panicked, for the log.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("%v", e.Value) }

// Call runs fn in a goroutine of its own, with a context that ends after
// timeout, and returns what it returns. A panic in fn is a *PanicError.
// When the timeout passes first, Call returns an error wrapping
// ErrTimeout; when ctx ends first, one wrapping ctx.Err(). Either way fn
// is left running with its context done (Go cannot stop a goroutine), and
// whatever it returns later is dropped.
func Call[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: &PanicError{Value: p, Stack: debug.Stack()}}
			}
		}()
		v, err := fn(cctx)
		done <- answer{v: v, err: err}
	}()
	var zero T
	select {
	case a := <-done:
		return a.v, a.err
	case <-cctx.Done():
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return zero, fmt.Errorf("%w after %s", ErrTimeout, timeout)
	}
}
