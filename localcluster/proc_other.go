//go:build !unix

package localcluster

import (
	"os"
	"syscall"
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

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
