package flow_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/worksteal/worksteal/internal/flow"
	"github.com/worksteal/worksteal/internal/qstore"
)

// byName maps a state to its name, which is each storage state's String.
var byName = flow.States[string]{Unknown: "unknown", Running: "running", Done: "done", Failed: "failed", Canceled: "canceled"}

// Every state the storage names maps to the flow state of that name, so
// a state added to the storage and not here fails; others to Unknown.
func TestEveryStorageState(t *testing.T) {
	t.Parallel()
	n := 0
	for s := qstore.ChainState(1); !strings.HasPrefix(s.String(), "ChainState("); s++ {
		if got := byName.Chain(s); got != s.String() {
			t.Errorf("Chain(%v) = %s", s, got)
		}
		n++
	}
	for s := qstore.JoinState(1); !strings.HasPrefix(s.String(), "JoinState("); s++ {
		if got := byName.Join(s); got != s.String() {
			t.Errorf("Join(%v) = %s", s, got)
		}
	}
	if n != 4 {
		t.Errorf("%d chain states; want 4 (running, done, failed, canceled)", n)
	}
	if got := byName.Chain(0); got != "unknown" {
		t.Errorf("Chain(0) = %s; want unknown", got)
	}
	if got := byName.Join(qstore.JoinState(99)); got != "unknown" {
		t.Errorf("Join(99) = %s; want unknown", got)
	}
}

// One path per idea: no package but the storage and this one names the
// storage's flow states, so no second mapping of them grows elsewhere.
func TestOneMapping(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	state := regexp.MustCompile(`qstore\.(Chain|Join)(Running|Done|Failed|Canceled)\b`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(root, path); rel == filepath.Join("internal", "qstore") || rel == filepath.Join("internal", "flow") ||
				strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := state.Find(src); m != nil {
			t.Errorf("%s names %s: map a flow's state with internal/flow", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
