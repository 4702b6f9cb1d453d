package e2ehang

import (
	"testing"
	"time"

	"github.com/inrun/inrun/e2e"
)

func TestDevZero(t *testing.T) {
	done := make(chan struct{})
	go func() {
		_, err := e2e.Parse("/tmp/x/test/e2e.yaml", []byte("cases:\n  - name: a\n    cr: /dev/zero\n    steps: []\n"))
		t.Log(err)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Parse of a case whose cr is /dev/zero has not returned in 5s")
	}
}
