package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serverEnv names the variable that picks the redis-server binary every
// Start, StartCluster and StartTLS runs: a path (or a name on PATH), so
// that one test binary can be run against any Redis or Valkey build.
const serverEnv = "REDIS_SERVER"

// errNoServer means REDIS_SERVER is unset and no redis-server is on PATH.
var errNoServer = errors.New("redis-server not found on PATH")

// binary is the redis-server this process starts, and its version line.
type binary struct {
	path    string
	version string // "Redis server v=7.0.15", "Valkey server v=8.0.1"
}

// serverBinary finds the binary once per test binary: every test starts
// the same server, and `--version` is not worth a process per test.
var serverBinary = sync.OnceValues(findBinary)

// versionLogged makes the first server started say which one it is (seen
// with -v or when that test fails; make test prints it as well).
var versionLogged atomic.Bool

func findBinary() (binary, error) {
	name := os.Getenv(serverEnv)
	if name == "" {
		path, err := exec.LookPath("redis-server")
		if err != nil {
			return binary{}, errNoServer
		}
		return versionOf(path, "redis-server on PATH ("+path+")")
	}
	if strings.Contains(name, "/") && !filepath.IsAbs(name) {
		return binary{}, fmt.Errorf("%s=%q is a relative path, but go test runs each package in its own folder: give an absolute path (make test makes it absolute)", serverEnv, name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return binary{}, fmt.Errorf("%s=%q is not an executable redis-server (%v): set it to the path of a redis-server binary, or unset it to use redis-server on PATH", serverEnv, name, err)
	}
	return versionOf(path, serverEnv+"="+name)
}

// versionOf runs `path --version`, which also proves the binary is a
// Redis-compatible server that runs on this machine.
func versionOf(path, what string) (binary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 3 || !strings.HasPrefix(f[2], "v=") {
		return binary{}, fmt.Errorf("%s: `%s --version` printed %q (%v), not a redis-server version", what, path, strings.TrimSpace(string(out)), err)
	}
	return binary{path: path, version: strings.Join(f[:3], " ")}, nil
}

// localBinary returns the path of the redis-server to start, or fails the
// test saying why; op names what needs it, for the message.
func localBinary(t testing.TB, op string) string {
	t.Helper()
	b, err := serverBinary()
	if errors.Is(err, errNoServer) {
		hint := ""
		if os.Getenv("REDIS_URL") != "" {
			hint = " (REDIS_URL is an external server)"
		}
		t.Fatalf("redistest: %s needs a local redis-server binary%s: %v; %s, or set %s to the path of one", op, hint, err, installHint, serverEnv)
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if versionLogged.CompareAndSwap(false, true) {
		t.Logf("redistest: %s (%s)", b.version, b.path)
	}
	return b.path
}
