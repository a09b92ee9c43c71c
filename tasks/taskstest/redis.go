package taskstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis starts a redis-server for t and returns a client of it; both
// end in t.Cleanup. The server is $REDIS_SERVER when set (a path, or a
// name on PATH), else redis-server on PATH; when there is none, t fails
// with the command that installs it.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("taskstest: %s not found (%v); install it: %s, or set REDIS_SERVER to a redis-server binary", bin, err, installHint())
	}
	// A short directory: a Unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "taskstest")
	if err != nil {
		t.Fatalf("taskstest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(path, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("taskstest: start %s: %v", path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	// The server answers within milliseconds; poll its socket until it
	// does, or it exits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return rdb
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("taskstest: %s exited: %s", path, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("taskstest: %s did not answer on %s within 10s: %v", path, sock, err)
		}
		time.Sleep(5 * time.Millisecond) // polls a starting server; asserts nothing
	}
}

func installHint() string {
	switch runtime.GOOS {
	case "darwin":
		return "brew install redis"
	case "linux":
		return "sudo apt-get install redis-server (Debian, Ubuntu), or your distribution's redis package"
	}
	return "see https://redis.io/docs/latest/operate/oss_and_stack/install/"
}
