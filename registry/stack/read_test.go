package stack_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inrun/inrun/internal/diag/diagtest"
	"github.com/inrun/inrun/registry/stack"
)

// TestReadErrors: every Stack in testdata/errors is wrong on purpose and
// says inline which diagnostics it expects.
func TestReadErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/errors/*.yaml (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := stack.Read(file, src)
			if s != nil && err != nil {
				t.Errorf("Read returned a Stack and an error")
			}
			diagtest.Check(t, file, src, err, false)
		})
	}
}

func TestRead(t *testing.T) {
	s, err := stack.Read("stack.yaml", []byte(`apiVersion: inrun.dev/v1alpha1
kind: Stack
metadata:
  name: payments
registry: registry.example/platform
patterns:
  - name: website
    version: ^1.2.0
    accept: {version: 1.2.3, until: 2027-03-31}
  - name: database
    registry: localhost:5000/team
    version: ">=2.0.0 <3.0.0"
    accept:
      - {version: "~2.1", until: "2027-01-31"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "payments" || len(s.Patterns) != 2 {
		t.Fatalf("%+v", s)
	}
	w, db := s.Patterns[0], s.Patterns[1]
	if w.Name != "website" || w.Registry != "registry.example/platform" || w.Host() != "registry.example" || w.Namespace() != "platform" || w.Version != "^1.2.0" || w.Pos.Line != 7 {
		t.Errorf("website %+v", w)
	}
	if len(w.Accept) != 1 || w.Accept[0].Version != "1.2.3" || !w.Accept[0].Until.Equal(time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("website's acceptance %+v", w.Accept)
	}
	if db.Registry != "localhost:5000/team" || len(db.Accept) != 1 || db.Accept[0].Version != "~2.1" {
		t.Errorf("database %+v", db)
	}
}
