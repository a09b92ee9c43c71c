package redistest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const installHint = "install it with `sudo apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"

const (
	readyTimeout   = 10 * time.Second
	restartTimeout = 5 * time.Second
	pollInterval   = 15 * time.Millisecond
	startAttempts  = 5
)

// Client timeouts are short so fault-injection tests (Kill, Pause) see
// errors quickly instead of hanging on go-redis defaults (5s dial, 3s read).
const (
	dialTimeout = 500 * time.Millisecond
	ioTimeout   = time.Second
)

var (
	errExited = errors.New("redis-server exited during startup")
	// errPortInUse means the port was grabbed by someone else between
	// choosing and binding it (or is still held); worth retrying.
	errPortInUse = errors.New("redis-server could not bind its port: address already in use")
)

// Server is one redis-server process (or, without a local binary, an
// external instance from REDIS_URL).
type Server struct {
	t       testing.TB
	bin     string // "" when backed by REDIS_URL
	url     string // set only when backed by REDIS_URL
	opts    *redis.Options
	dir     string
	port    int
	busPort int // cluster bus port, 0 when not a cluster node
	args    []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd.Wait returns
	paused bool
}

// Start starts a single redis-server on a free port and stops it in
// t.Cleanup. extraArgs are appended to the command line ("--maxmemory", "1mb").
func Start(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	if u := os.Getenv("REDIS_URL"); u != "" {
		if _, err := serverBinary(); errors.Is(err, errNoServer) {
			opts, err := redis.ParseURL(u)
			if err != nil {
				t.Fatalf("redistest: parse REDIS_URL: %v", err)
			}
			return &Server{t: t, url: u, opts: opts}
		}
	}
	return startLocal(t, localBinary(t, "Start"), false, extraArgs)
}

func startLocal(t testing.TB, bin string, cluster bool, extraArgs []string) *Server {
	t.Helper()
	return startProcess(t, bin, func(s *Server, ports []int) {
		s.args = append(s.args, "--save", "", "--appendonly", "no")
		if cluster {
			// An explicit bus port avoids needing port+10000 free as well.
			s.busPort = ports[1]
			s.args = append(s.args, "--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
				"--cluster-node-timeout", "2000",
				"--cluster-port", strconv.Itoa(s.busPort))
		}
		s.args = append(s.args, extraArgs...)
	})
}

// startProcess starts bin on a free port with the options every server
// shares, then those that more appends to s.args (ports[1] is a second
// free port, for a cluster bus), retrying when the port was taken meanwhile.
func startProcess(t testing.TB, bin string, more func(s *Server, ports []int)) *Server {
	t.Helper()
	// TempDir first: cleanups run LIFO, so the process dies before its dir is removed.
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.stop)
	var err error
	for range startAttempts {
		ports := freePorts(t, 2)
		s.port = ports[0]
		s.args = []string{
			"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
			"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"),
			"--daemonize", "no", "--protected-mode", "no",
		}
		more(s, ports)
		s.opts = &redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))}
		if err = s.launch(readyTimeout); !errors.Is(err, errPortInUse) {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: start %s: %v\n%s", bin, err, s.logTail())
	}
	return s
}

// Addr returns "127.0.0.1:port" (or the REDIS_URL host:port).
func (s *Server) Addr() string { return s.opts.Addr }

// URL returns "redis://127.0.0.1:port/0" (or REDIS_URL unchanged).
func (s *Server) URL() string {
	if s.url != "" {
		return s.url
	}
	return "redis://" + s.opts.Addr + "/0"
}

// clientOptions returns a fresh copy of the connection options with the
// package's short timeouts; values set explicitly in REDIS_URL win.
func (s *Server) clientOptions() *redis.Options {
	o := *s.opts
	if o.DialTimeout == 0 {
		o.DialTimeout = dialTimeout
	}
	// go-redis redials 5 times, 100ms apart, before failing; once is enough
	// locally and keeps "server is down" fast.
	if o.DialerRetries == 0 {
		o.DialerRetries = 1
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = ioTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = ioTimeout
	}
	// 0 would mean go-redis's default of 3 retries; -1 disables them so a
	// killed or paused server surfaces as an error on the first attempt.
	if o.MaxRetries == 0 {
		o.MaxRetries = -1
	}
	// Otherwise go-redis ignores ctx deadlines and waits for ReadTimeout.
	o.ContextTimeoutEnabled = true
	return &o
}

// Options returns a fresh copy of the options of [Server.Client], for a
// client that needs more settings (an ACL user's, DisableIdentity).
func (s *Server) Options() *redis.Options { return s.clientOptions() }

// Client returns a new client for s (no retries, short timeouts, ctx
// deadlines honoured), closed in t.Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(s.clientOptions())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// CommandCalls returns how often cmd (lower-case, e.g. "evalsha") ran since
// the server started, per INFO commandstats; 0 if it never ran.
func (s *Server) CommandCalls(t testing.TB, cmd string) int64 {
	t.Helper()
	return s.CommandStats(t)[strings.ToLower(cmd)]
}

func (s *Server) requireLocal(op string) {
	s.t.Helper()
	if s.bin == "" {
		s.t.Fatalf("redistest: %s needs a local redis-server binary (REDIS_URL is external); %s", op, installHint)
	}
}

// Kill sends SIGKILL and waits until the process is gone, so its port is closed.
func (s *Server) Kill() {
	s.t.Helper()
	s.requireLocal("Kill")
	s.stop()
}

// Restart starts a fresh process on the same port (killing the old one if
// needed). Without persistence the data set is empty afterwards.
func (s *Server) Restart() {
	s.t.Helper()
	s.requireLocal("Restart")
	s.stop()
	// Redis sets SO_REUSEADDR so rebinding is normally immediate; retry in
	// case a lingering socket still holds the port.
	deadline := time.Now().Add(restartTimeout)
	for {
		err := s.launch(readyTimeout)
		if err == nil {
			return
		}
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart redis-server on %s: %v\n%s", s.Addr(), err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pause freezes the process with SIGSTOP: connections stay open but nothing
// is answered, like a hung server.
func (s *Server) Pause() { s.signal("Pause", syscall.SIGSTOP, true) }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() { s.signal("Resume", syscall.SIGCONT, false) }

func (s *Server) signal(op string, sig syscall.Signal, paused bool) {
	s.t.Helper()
	s.requireLocal(op)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redistest: %s: redis-server on %s is not running", op, s.Addr())
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %s: %v", op, err)
	}
	s.paused = paused
}
