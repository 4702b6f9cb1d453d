//go:build unix

package simulate

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// groupAttr puts a child in a process group of its own, led by itself, so
// that its pid is also its group id and a signal reaches everything it
// started (the program `go run` builds, the handlers socat forks).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals every process in the group that pid leads.
func signalGroup(pid int, sig syscall.Signal) {
	syscall.Kill(-pid, sig)
}

// guardScript waits on its standard input, a pipe only this process holds
// open. A line means the reconciler was stopped: nothing to do. The end of
// input without one means this process died first (even by SIGKILL: the
// kernel closes the pipe), and the script stops the reconciler's group.
const guardScript = `read -r _ && exit 0
kill -s TERM -- "-$1" 2>/dev/null
sleep 3
kill -s KILL -- "-$1" 2>/dev/null
exit 0`

// guard is a shell that stops a reconciler's process group when this
// process dies without stopping it: a test binary that panics or times out,
// an inrun interrupted with Ctrl-C.
type guard struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startGuard(pgid int) (*guard, error) {
	cmd := exec.Command("sh", "-c", guardScript, "inrun-reconciler-guard", strconv.Itoa(pgid))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A group of its own keeps a Ctrl-C meant for this process from
	// ending the guard before it acts.
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the reconciler's guard: %w", err)
	}
	return &guard{cmd: cmd, stdin: stdin}, nil
}

// disarm makes the guard exit without signalling anything.
func (g *guard) disarm() {
	if g == nil {
		return
	}
	fmt.Fprintln(g.stdin, "stopped")
	g.stdin.Close()
	g.cmd.Wait()
}
