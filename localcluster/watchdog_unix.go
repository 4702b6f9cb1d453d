//go:build unix

package localcluster

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
)

// watchdogScript reads process group ids, one a line, until it reads
// "done" or its input ends. Input ends without "done" only when the owner
// died without calling Stop, even by SIGKILL, because then the kernel
// closes the owner's end of the pipe. The script then kills the groups and
// removes the paths it was given: the cluster's directory and the extra
// kubeconfig, if any.
const watchdogScript = `groups=
while read -r line; do
	case $line in
	done) exit 0 ;;
	*) groups="$groups $line" ;;
	esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
sleep 1
rm -rf -- "$@"
`

// watchdog is a shell process that cleans up after a Cluster whose owner
// dies without calling Stop: a test binary that panics or times out, or an
// inrun killed with SIGKILL. Without it, etcd and kube-apiserver, which run
// in process groups of their own, would outlive their owner.
type watchdog struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startWatchdog starts a watchdog that removes paths when it fires.
func startWatchdog(paths ...string) (*watchdog, error) {
	cmd := exec.Command("sh", append([]string{"-c", watchdogScript, "inrun-cluster-watchdog"}, paths...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Its own process group keeps a Ctrl-C meant for the owner from
	// killing it too.
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the cluster watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, stdin: stdin}, nil
}

// watch adds the process group pgid to what the watchdog kills.
func (w *watchdog) watch(pgid int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := fmt.Fprintf(w.stdin, "%d\n", pgid)
	return err
}

// disarm makes the watchdog exit without killing anything.
func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintln(w.stdin, "done")
	w.stdin.Close()
	w.cmd.Wait()
}
