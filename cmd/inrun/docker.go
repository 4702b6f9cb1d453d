package main

import (
	"context"
	"os/exec"
	"time"
)

// dockerWorks reports whether a Docker engine answers, not just a client.
func dockerWorks(ctx context.Context) bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}
