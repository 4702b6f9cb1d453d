//go:build unix

package localcluster

import (
	"errors"
	"syscall"
)

// groupAttr puts a child in a process group of its own, led by itself, so
// that its pid is also its group id.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals every process in the group that pid leads.
func signalGroup(pid int, sig syscall.Signal) {
	syscall.Kill(-pid, sig)
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
