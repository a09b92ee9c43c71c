package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePorts returns n distinct ports that were free a moment ago. All
// listeners are held open together so the ports differ.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: find free port: %v", err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// launch starts the process and waits until it answers PING, or exits, or
// the timeout passes.
func (s *Server) launch(timeout time.Duration) error {
	// Early errors (bad arguments) go to stderr before the logfile is open.
	out, err := os.OpenFile(filepath.Join(s.dir, "stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child keeps its own descriptor
	logPath := filepath.Join(s.dir, "redis.log")
	var logStart int64 // only this attempt's log lines tell why it exited
	if fi, err := os.Stat(logPath); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.paused = cmd, done, false
	s.mu.Unlock()

	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			if data, err := os.ReadFile(logPath); err == nil && int64(len(data)) >= logStart &&
				strings.Contains(string(data[logStart:]), "Address already in use") {
				return errPortInUse
			}
			return errExited
		default:
		}
		if probe(s.opts.Addr, cmd.Process.Pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING reply from %s within %v", s.opts.Addr, timeout)
		}
		time.Sleep(pollInterval)
	}
}

// probe reports whether addr answers PING and is our process: checking the
// pid guards against another test's redis having taken the port meanwhile.
func probe(addr string, pid int) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := io.WriteString(c, "PING\r\nINFO server\r\n"); err != nil {
		return false
	}
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		return false
	}
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "$") {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return false
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return false
	}
	return strings.Contains(string(buf), "\nprocess_id:"+strconv.Itoa(pid)+"\r\n")
}

// stop kills the process (if any) and waits for it; also the t.Cleanup hook.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if s.paused {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = s.cmd.Process.Kill() // SIGKILL; ErrProcessDone if it already exited
	<-s.done
	s.cmd, s.done, s.paused = nil, nil, false
}

// logTail returns the end of the server's log files for failure messages.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"redis.log", "stderr.log"} {
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 2048 {
			data = data[len(data)-2048:]
		}
		fmt.Fprintf(&b, "--- tail of %s ---\n%s\n", name, data)
	}
	return b.String()
}

// running reports whether the process is up (neither killed nor exited
// on its own since it started).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}
