package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// pacedEnv carries a pacedSpec (JSON) to a re-executed test binary.
const pacedEnv = "WORKSTEAL_FAULTS_PACED"

// pacedSpec is what a paced process does: it registers one automatically
// paced job, "tidy", at Every, with no traffic (the recruiter's pace timer
// makes its visits), and each run RPUSHes its unix ms to Prefix+":runs".
type pacedSpec struct {
	Addr, Prefix string
	Every        time.Duration
}

// pacedJob is the job's name.
const pacedJob = "tidy"

// runsKey is the list of the fleet's runs, unix ms each.
func (s pacedSpec) runsKey() string { return s.Prefix + ":runs" }

// runPaced is a paced process: it prints "READY" on stdout once its job is
// registered, and shuts down when stdin closes or on SIGTERM. Its stderr
// has the recruiter's log, a "run <ms>" line per run and a "rpush: ..."
// line for each run that could not be recorded.
func runPaced(specJSON string) int {
	var spec pacedSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "paced spec:", err)
		return 2
	}
	if err := pacedProcess(spec); err != nil {
		fmt.Fprintln(os.Stderr, "paced:", err)
		return 1
	}
	return 0
}

func pacedProcess(spec pacedSpec) error {
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	// Several processes share a small machine: the pressure gate would
	// hold slices back for the others' CPU.
	rec, err := recruiter.New(rdb, recruiter.Config{Prefix: spec.Prefix, Pressure: -1,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	key := spec.runsKey()
	job := recruiter.Func(pacedJob, func(ctx context.Context) (recruiter.Report, error) {
		ms := time.Now().UnixMilli()
		// One write each, so that a SIGKILL leaves whole lines.
		if err := rdb.RPush(ctx, key, ms).Err(); err != nil {
			_, _ = io.WriteString(os.Stderr, fmt.Sprintf("rpush: %d: %v\n", ms, err))
		} else {
			_, _ = io.WriteString(os.Stderr, fmt.Sprintf("run %d\n", ms))
		}
		return recruiter.Report{}, nil
	})
	if err := rec.Register(job, recruiter.JobConfig{Every: spec.Every}); err != nil {
		return err
	}
	if _, err := io.WriteString(os.Stdout, "READY\n"); err != nil {
		return err
	}

	stop := make(chan struct{}, 2)
	sigs := make(chan os.Signal, 1)
	ossignal.Notify(sigs, syscall.SIGTERM)
	go func() { <-sigs; stop <- struct{}{} }()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop <- struct{}{} }()
	<-stop

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rec.Shutdown(ctx)
}

// pacedProc is one paced process.
type pacedProc struct {
	n     int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   string // its stderr
	done  chan struct{}
}

// startPaced re-executes the test binary as paced process n and waits for
// its READY; it is SIGKILLed in t.Cleanup if still running.
func startPaced(t *testing.T, spec pacedSpec, dir string, n int) *pacedProc {
	t.Helper()
	p := &pacedProc{n: n, out: filepath.Join(dir, fmt.Sprintf("paced-%d.err", n)), done: make(chan struct{})}
	env, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), pacedEnv+"="+string(env))
	p.cmd.Stderr = errFile
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start paced process %d: %v", n, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout) // until it exits: Wait closes the pipe
		_ = p.cmd.Wait()
		close(p.done)
	}()
	select {
	case line := <-ready:
		if line != "READY\n" {
			<-p.done
			out, _ := os.ReadFile(p.out)
			t.Fatalf("paced process %d said %q, not READY:\n%s", n, line, tail(out, 4096))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("paced process %d not READY after 30s", n)
	}
	return p
}

// runs is how many runs the process recorded in [from, to) (unix ms).
func (p *pacedProc) runs(t *testing.T, from, to int64) (ran, unrecorded int) {
	t.Helper()
	data, err := os.ReadFile(p.out)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "run" && f[0] != "rpush:") {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSuffix(f[1], ":"), 10, 64)
		if err != nil || ms < from || ms >= to {
			continue
		}
		if f[0] == "run" {
			ran++
		} else {
			unrecorded++
		}
	}
	return ran, unrecorded
}

// TestPacedFleetKilled runs an automatically paced job ("tidy", Every
// 500ms, no traffic) on 10 processes started one after another, so that
// the first is the oldest and carries the job. Once the fleet has settled,
// the 9 oldest are SIGKILLed, the carrier among them: the survivor must
// take the job over and keep its cadence. The runs recorded in Redis are
// counted in 10-slot (5 s) windows from the kill, as the slots' phase is
// the job's own. The 20 slots before the kill must have at least 17 runs
// (8.5 of 10 a window) and at most 21 (one run per slot, give or take a
// boundary); the 30 slots 5 to 20 s after it at least 26 and at most 31:
// the survivor, the youngest, watches the carrier and takes its place
// within 8 + 1.5 slots.
func TestPacedFleetKilled(t *testing.T) {
	t.Parallel()
	const (
		every   = 500 * time.Millisecond
		procs   = 10
		killed  = 9
		settle  = 15 * time.Second
		window  = 10 * every // 5 s: a bucket of 10 slots
		observe = 40 * every // 20 s after the kill
		// The runs of 20 slots: one each, but for a slot missed now and
		// then, and one more at most as a window's edges cut two slots.
		minRuns, maxRuns = 17, 21
	)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	spec := pacedSpec{Addr: srv.Addr(), Prefix: redistest.Prefix(t), Every: every}
	dir := t.TempDir()

	var fleet []*pacedProc
	for i := range procs {
		if i > 0 {
			time.Sleep(100 * time.Millisecond) // start order is age order
		}
		fleet = append(fleet, startPaced(t, spec, dir, i))
	}
	time.Sleep(settle)

	for _, p := range fleet[:killed] {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL paced process %d: %v", p.n, err)
		}
	}
	for _, p := range fleet[:killed] {
		<-p.done
	}
	kill := time.Now()
	survivor := fleet[killed]
	time.Sleep(observe + 2*every) // the last run's RPUSH is in by then

	ctx := testrig.Context(t, 10*time.Second)
	raw, err := rdb.LRange(ctx, spec.runsKey(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	killMs := kill.UnixMilli()
	windowMs := window.Milliseconds()
	// Buckets of 5 s: before the kill (negative, -2 and -1 kept) and after
	// it (0 to 3: 0-5 s, 5-10 s, 10-15 s, 15-20 s).
	buckets := map[int64]int{}
	for _, s := range raw {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("run %q in %s: %v", s, spec.runsKey(), err)
		}
		d := ms - killMs
		b := d / windowMs
		if d < 0 {
			b = -((-d + windowMs - 1) / windowMs) // floor
		}
		buckets[b]++
	}
	var report []string
	for b := int64(-2); b < int64(observe/window); b++ {
		report = append(report, fmt.Sprintf("%+ds..%+ds: %d", b*5, (b+1)*5, buckets[b]))
	}
	before := buckets[-2] + buckets[-1]
	after := buckets[1] + buckets[2] + buckets[3]
	t.Logf("%d processes, %d runs recorded in all; runs per 5 s window (10 slots) from the SIGKILL of the %d oldest: %s",
		procs, len(raw), killed, strings.Join(report, ", "))

	// Who ran, by each process's own log: the carrier before the kill,
	// the survivor after it.
	var who []string
	from, to := killMs-2*windowMs, killMs+observe.Milliseconds()
	for _, p := range fleet {
		pre, lostPre := p.runs(t, from, killMs)
		post, lostPost := p.runs(t, killMs, to)
		if pre+post+lostPre+lostPost > 0 {
			s := fmt.Sprintf("process %d: %d before, %d after", p.n, pre, post)
			if lostPre+lostPost > 0 {
				s += fmt.Sprintf(" (%d runs' RPUSH failed)", lostPre+lostPost)
			}
			who = append(who, s)
		}
	}
	t.Logf("runs in the 10 s before the kill and the 20 s after it, per process (0 oldest): %s", strings.Join(who, "; "))

	if before < minRuns || before > maxRuns {
		t.Errorf("%d runs in the 20 slots before the kill, want %d to %d: the settled fleet did not run the job about once a slot", before, minRuns, maxRuns)
	}
	if after < 26 || after > 31 {
		t.Errorf("%d runs in slots 10 to 40 after the SIGKILL of the %d oldest (the carrier among them), want 26 to 31: the survivor did not take the job over within the watcher's bound", after, killed)
	}

	// The survivor shuts down cleanly when its stdin closes.
	_ = survivor.stdin.Close()
	select {
	case <-survivor.done:
		if code := survivor.cmd.ProcessState.ExitCode(); code != 0 {
			out, _ := os.ReadFile(survivor.out)
			t.Errorf("survivor exited %d:\n%s", code, tail(out, 4096))
		}
	case <-time.After(15 * time.Second):
		t.Errorf("survivor still running 15s after its stdin closed")
	}
}
