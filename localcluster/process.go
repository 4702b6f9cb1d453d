package localcluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// logTailLines is how much of a component's log an error carries: enough
// for the fatal line and what led to it.
const logTailLines = 25

// ComponentError reports a component that failed to start or exited on its
// own. Its message ends with the last lines of the component's log, which
// is usually where the cause is ("address already in use", a bad flag).
type ComponentError struct {
	// Component is the binary's name, such as "kube-apiserver".
	Component string
	// Err is what went wrong: a start that failed or timed out, or how the
	// process exited.
	Err error
	// LogTail is the end of the component's log.
	LogTail string
}

func (e *ComponentError) Error() string {
	if e.LogTail == "" {
		return fmt.Sprintf("%s: %v (its log is empty)", e.Component, e.Err)
	}
	return fmt.Sprintf("%s: %v\n--- last lines of the %s log ---\n%s\n---", e.Component, e.Err, e.Component, e.LogTail)
}

func (e *ComponentError) Unwrap() error { return e.Err }

// componentError wraps err with the tail of name's log.
func (c *Cluster) componentError(name string, err error) error {
	return &ComponentError{
		Component: name,
		Err:       err,
		LogTail:   tailFile(filepath.Join(c.logDir(), name+".log"), logTailLines),
	}
}

// process is one running component. The cluster starts kube-controller-
// manager, kube-scheduler and kwok itself (cmd is set); etcd and
// kube-apiserver are envtest's, and the cluster only knows their pid.
type process struct {
	name    string
	pid     int
	addr    string
	logPath string

	cmd      *exec.Cmd
	waitDone chan struct{}
	waitErr  error

	// retired marks a process stopped on purpose while the cluster runs
	// (StopAPIServer): its exit is no failure.
	retired atomic.Bool
}

// startProcess starts a component in a process group of its own, with its
// output in logPath. The group keeps a Ctrl-C in the terminal from reaching
// the components directly: the owner decides when and how they stop, and
// Stop signals the whole group so that no child of a component survives it.
func startProcess(name, path string, args, env []string, logPath string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child has its own copy of the descriptor.
	defer log.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, logPath: logPath, cmd: cmd, waitDone: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.waitDone)
	}()
	return p, nil
}

// exited reports whether the process has exited and, for processes the
// cluster started, how.
func (p *process) exited() (bool, error) {
	if p.cmd == nil {
		if alive(p.pid) {
			return false, nil
		}
		return true, errors.New("exited unexpectedly")
	}
	select {
	case <-p.waitDone:
		if p.waitErr == nil {
			return true, errors.New("exited unexpectedly with status 0")
		}
		return true, fmt.Errorf("exited unexpectedly: %w", p.waitErr)
	default:
		return false, nil
	}
}

// error describes p's unexpected exit.
func (p *process) error(err error) *ComponentError {
	return &ComponentError{Component: p.name, Err: err, LogTail: tailFile(p.logPath, logTailLines)}
}

// stop sends SIGTERM to p's process group and SIGKILL after timeout, and
// waits until p has exited.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.waitDone:
		return nil
	default:
	}
	signalGroup(p.pid, syscall.SIGTERM)
	select {
	case <-p.waitDone:
		return nil
	case <-time.After(timeout):
	}
	signalGroup(p.pid, syscall.SIGKILL)
	<-p.waitDone
	return fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.name, timeout)
}

// kill sends SIGKILL to the process group of a process envtest started, if
// it is still alive, and waits for it to go.
func (p *process) kill() {
	if !alive(p.pid) {
		return
	}
	signalGroup(p.pid, syscall.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); alive(p.pid) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// tailFile returns the last n lines of the file at path, reading at most
// its last 64 KiB.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	var lines []string
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, window), window)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
