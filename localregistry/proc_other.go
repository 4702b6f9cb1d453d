//go:build !linux

package localregistry

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
