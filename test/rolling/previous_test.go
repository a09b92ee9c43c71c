package rolling_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// previousRelease is the commit of the previous release: main before
// issue 37, whose scripts internal/qstore/testdata/previous holds.
const previousRelease = "b3b2630"

// buildPrevious extracts the previous release's tree from git, puts the
// driver testdata/previousmux in it as cmd/previousmux of its root module
// and builds it there, with that release's go.mod and nothing of this
// one's. The build is -trimpath so that Go's build cache serves the
// packages of the next run, extracted elsewhere. It fails (never skips)
// when the commit is not in the repository.
func buildPrevious(t *testing.T) string {
	t.Helper()
	start := time.Now()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the test needs git and the repository's history)", errText(err))
	}
	root := strings.TrimSpace(string(top))
	git := func(args ...string) *exec.Cmd {
		c := exec.Command("git", args...)
		c.Dir = root
		return c
	}
	if out, err := git("cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the previous release's commit %s is not in %s (%v %s): this test builds it from git; "+
			"run `git fetch --unshallow` (or use a full clone) and run it again", previousRelease, root, err, out)
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "previous")
	archive, err := git("archive", "--format=tar", previousRelease).Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", previousRelease, errText(err))
	}
	if err := untar(bytes.NewReader(archive), tree); err != nil {
		t.Fatalf("extract %s: %v", previousRelease, err)
	}
	driver, err := os.ReadFile(filepath.Join("testdata", "previousmux", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	cmdDir := filepath.Join(tree, "cmd", "previousmux")
	if err := os.MkdirAll(cmdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmdDir, "main.go"), driver, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "previousmux")
	build := exec.Command(goTool(), "build", "-trimpath", "-o", bin, "./cmd/previousmux")
	build.Dir = tree
	// The old root module alone: no workspace, and go.sum completed from
	// the module proxy if the driver needs a sum it lacks.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release's driver: %v\n%s", err, out)
	}
	t.Logf("the previous release (%s) extracted and its driver built in %v", previousRelease, time.Since(start).Round(time.Millisecond))
	return bin
}

// goTool is the go command on PATH, as go test itself is found.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go" // exec then says that it is not found
}

// untar writes the regular files and directories of a git archive to dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, dir+string(filepath.Separator)) {
			continue // pax headers and the like
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o200)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// errText is err with a command's stderr, if it kept any.
func errText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return err.Error() + ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return err.Error()
}
