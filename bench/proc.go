package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoRedisServer says how to get the one binary the benchmark needs.
var errNoRedisServer = errors.New("redis-server not found on PATH: `make bench-fleet` installs it with apt-get; otherwise apt-get install redis-server, or brew install redis")

// children are the processes we started, killed by killAll on any exit.
var children struct {
	sync.Mutex
	procs map[*exec.Cmd]chan struct{}
}

// env is the shared part of a run: the redis-server and a client to it.
type env struct {
	opts         options
	addr         string
	rdb          *redis.Client
	dir          string
	redisVersion string
	self         string // this program's binary, re-executed for services
}

// startEnv starts the redis-server the whole run uses.
func startEnv(ctx context.Context, o options) (*env, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedisServer
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary to start services: %w", err)
	}
	dir, err := os.MkdirTemp("", "worksteal-bench-")
	if err != nil {
		return nil, err
	}
	port := o.port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		return nil, fmt.Errorf("port %d is taken (%v): pass another -port, or 0 for a free one", port, err)
	} else {
		l.Close()
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", logPath)
	redisDone, err := startChild(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 32})
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		if isClosed(redisDone) {
			log, _ := os.ReadFile(logPath)
			if strings.Contains(string(log), "Address already in use") {
				return nil, fmt.Errorf("redis-server could not bind %s: the port is taken; pass another -port, or 0 for a free one", addr)
			}
			return nil, fmt.Errorf("redis-server exited at start; its log:\n%s", log)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, cmp.Or(ctx.Err(), fmt.Errorf("redis-server on %s did not answer PING within 10s", addr))
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}
	return &env{opts: o, addr: addr, rdb: rdb, dir: dir, redisVersion: infoField(info, "redis_version"), self: self}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startChild starts cmd, registered for killAll, in its own process group
// and (on Linux) killed by the kernel if we die first. stdout, when not
// nil, receives the child's standard output.
func startChild(cmd *exec.Cmd, stdout io.Writer) (done chan struct{}, err error) {
	setDeathSignal(cmd)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done = make(chan struct{})
	children.Lock()
	if children.procs == nil {
		children.procs = map[*exec.Cmd]chan struct{}{}
	}
	children.procs[cmd] = done
	children.Unlock()
	go func() { _ = cmd.Wait(); close(done) }()
	return done, nil
}

func isClosed(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// stopChild ends one child: SIGTERM, then SIGKILL after a grace period.
func stopChild(cmd *exec.Cmd, grace time.Duration) {
	children.Lock()
	done, ok := children.procs[cmd]
	delete(children.procs, cmd)
	children.Unlock()
	if !ok {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// killAll kills every child still running and waits for them.
func killAll() {
	children.Lock()
	procs := children.procs
	children.procs = nil
	children.Unlock()
	for cmd := range procs {
		_ = cmd.Process.Kill()
	}
	for _, done := range procs {
		<-done
	}
}

// proc is a started service or daemon: its address and how to stop it.
type proc struct {
	cmd  *exec.Cmd
	addr string // its HTTP listener
}

// startProc re-executes this program with -role and args, and waits for
// the "listening ADDR" line it prints once its server is up.
func (e *env) startProc(ctx context.Context, role, name string, args ...string) (*proc, error) {
	args = append([]string{"-role", role, "-redis", e.addr}, args...)
	cmd := exec.Command(e.self, args...)
	stderr, err := os.Create(filepath.Join(e.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	pr, pw := io.Pipe()
	done, err := startChild(cmd, pw)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// The scanner below ends when the child does.
	go func() { <-done; pw.Close() }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			stopChild(cmd, time.Second)
			return nil, fmt.Errorf("%s said %q, not its address", name, line)
		}
		return &proc{cmd: cmd, addr: addr}, nil
	case <-done:
		log, _ := os.ReadFile(filepath.Join(e.dir, name+".log"))
		return nil, fmt.Errorf("%s exited at start; its log:\n%s", name, log)
	case <-time.After(20 * time.Second):
		stopChild(cmd, time.Second)
		log, _ := os.ReadFile(filepath.Join(e.dir, name+".log"))
		return nil, fmt.Errorf("%s did not start within 20s; its log:\n%s", name, log)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop shuts the process down (it shuts its recruiter down on SIGINT).
func (p *proc) stop() { stopChild(p.cmd, 5*time.Second) }

func stopAll(ps []*proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.stop)
	}
	wg.Wait()
}

func addrs(ps []*proc) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.addr
	}
	return out
}
