package telemetry_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTelemetryIsALeaf: every package may use telemetry's names, so no
// package in this folder or under it imports one of worksteal's (the
// recruiter, tasks, queue, jobs, the dashboard...). Tests are free to.
func TestTelemetryIsALeaf(t *testing.T) {
	t.Parallel()
	const module = "github.com/worksteal/worksteal"
	files := 0
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p == module || strings.HasPrefix(p, module+"/") {
				t.Errorf("%s imports %s: telemetry is a leaf and imports nothing of worksteal's", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 {
		t.Fatalf("read %d non-test files, want at least doc.go and names.go", files)
	}
}
