package assets

import (
	"context"
	"path/filepath"

	"github.com/inrun/inrun/internal/filelock"
)

// lockDir takes an exclusive lock on dir, waiting while another process
// holds it, until ctx is done (package filelock).
func lockDir(ctx context.Context, dir string, p *printer) (unlock func(), err error) {
	return filelock.Lock(ctx, filepath.Join(dir, ".lock"), func() {
		p.printf("Waiting for another process that is building the assets in %s...", dir)
	})
}
