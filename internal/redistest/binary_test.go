package redistest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Not parallel: it sets REDIS_SERVER, which findBinary reads on each call.
func TestServerBinaryFromEnv(t *testing.T) {
	want, wantErr := serverBinary() // fixed before the changes below
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec")
	notRedis := filepath.Join(dir, "not-redis")
	for path, mode := range map[string]os.FileMode{notExec: 0o644, notRedis: 0o755} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho hello\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), notExec, dir, notRedis, "bin/redis-server"} {
		t.Setenv(serverEnv, bad)
		b, err := findBinary()
		if err == nil || !strings.Contains(err.Error(), serverEnv+"=") || !strings.Contains(err.Error(), bad) {
			t.Errorf("REDIS_SERVER=%s: %+v, %v; want an error naming REDIS_SERVER and the path", bad, b, err)
		}
	}

	if wantErr != nil {
		t.Skipf("no local redis-server: %v", wantErr)
	}
	t.Setenv(serverEnv, want.path)
	if b, err := findBinary(); err != nil || b != want || !strings.Contains(b.version, " server v=") {
		t.Errorf("REDIS_SERVER=%s: %+v, %v; want %+v", want.path, b, err, want)
	}
}
