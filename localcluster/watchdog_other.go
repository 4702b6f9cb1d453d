//go:build !unix

package localcluster

// watchdog does nothing where there is no POSIX shell: a Cluster whose
// owner dies without calling Stop leaves its processes behind there.
type watchdog struct{}

func startWatchdog(...string) (*watchdog, error) { return &watchdog{}, nil }

func (*watchdog) watch(int) error { return nil }

func (*watchdog) disarm() {}
