package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The example binary, built once for all the tests that run it as a
// process, as a user's `go run ./example` would.
var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

func exampleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "worksteal-example-"); buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "example")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// process is the example running as a child process.
type process struct {
	t                *testing.T
	cmd              *exec.Cmd
	http, echo, grpc string // the addresses it listens on
	admin            string // the dashboard's and the metrics'

	mu     sync.Mutex
	output []string
	exited chan struct{} // closed once the process has exited and its output is read
	err    error         // cmd.Wait's
}

var listeningLine = regexp.MustCompile(`^listening http=(\S+) echo=(\S+) grpc=(\S+) admin=(\S+)$`)

// startExample runs the example on free ports with env added to a clean
// environment, and waits until it listens. The process is killed at the
// test's end if it is still running.
func startExample(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	args = append([]string{"-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-summary=1s"}, args...)
	cmd := exec.Command(exampleBinary(t), args...)
	cmd.Env = append(cleanEnv(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // one stream, in order
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, cmd: cmd, exited: make(chan struct{})}
	listening := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.output = append(p.output, sc.Text())
			p.mu.Unlock()
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[1:]
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("example output:\n%s", p.log())
		}
	})
	select {
	case addrs := <-listening:
		p.http, p.echo, p.grpc, p.admin = addrs[0], addrs[1], addrs[2], addrs[3]
	case <-p.exited:
		t.Fatalf("the example exited before listening: %v", p.err)
	case <-time.After(time.Minute):
		t.Fatal("the example did not listen within a minute")
	}
	return p
}

// cleanEnv is the test's environment without the variables that would
// point the example elsewhere.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OTEL_"), strings.HasPrefix(name, "REDIS_"),
			name == "HTTP_ADDR", name == "ECHO_ADDR", name == "GRPC_ADDR", name == "ADMIN_ADDR",
			name == "TRAFFIC", name == "DEBUG":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.output, "\n")
}

// stop sends SIGTERM and returns the exit code and the output.
func (p *process) stop() (code int, output []string) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.t.Fatal("the example did not exit within a minute of SIGTERM")
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
	case errors.As(p.err, &exit):
		code = exit.ExitCode()
	default:
		p.t.Fatalf("wait: %v", p.err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return code, append([]string(nil), p.output...)
}

// eventually polls cond until it returns nil or the deadline passes, and
// fails the test with cond's last error then. The machine may be loaded:
// the deadline is generous and nothing is asserted about speed.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still not so after a minute: %v", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
