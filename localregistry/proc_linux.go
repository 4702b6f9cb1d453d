package localregistry

import "syscall"

// procAttr ends the registry when the process that started it dies, so a
// killed test leaves no registry behind.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
