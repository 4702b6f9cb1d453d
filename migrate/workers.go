package migrate

import (
	"context"
	"sync"
)

// runWorkers calls work on each of items, at most workers at once, and
// report with each result as it comes, one report at a time: report may
// count and print without a lock of its own. It stops handing items out
// once ctx ends, and returns when every item handed out is reported.
func runWorkers[T, R any](ctx context.Context, workers int, items []T, work func(T) R, report func(T, R)) {
	ch := make(chan T)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(1, min(workers, len(items))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				r := work(it)
				mu.Lock()
				report(it, r)
				mu.Unlock()
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case ch <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
}
