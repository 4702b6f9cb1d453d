package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/inrun/inrun/localcluster/assets"
)

// findChildren returns the etcd and kube-apiserver processes that are
// children of this process and mention dir on their command line: the ones
// envtest started for the cluster whose state is in dir. envtest keeps
// their handles to itself; /proc is the way to learn their pids.
func findChildren(dir string) []*process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var found []*process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses and
		// may itself hold spaces and parentheses, are: state ppid ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(stat[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(fields[1])); err != nil || ppid != self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		name := filepath.Base(string(argv0))
		if name == assets.Etcd || name == assets.KubeAPIServer {
			found = append(found, &process{name: name, pid: pid})
		}
	}
	return found
}
