//go:build !unix

package simulate

import (
	"errors"
	"os"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// groupAttr returns nil: process groups are a Unix notion.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills the process itself, the best that can be done without
// process groups.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// guard does nothing where there are no process groups to stop.
type guard struct{}

func startGuard(int) (*guard, error) { return nil, errors.New("no guard on this platform") }

func (*guard) disarm() {}
