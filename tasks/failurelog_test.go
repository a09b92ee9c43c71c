package tasks_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// logged is one record a capture handler kept: its level, message and
// attributes as text.
type logged struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// capture is a slog.Handler that keeps every record, at every level.
type capture struct {
	mu   *sync.Mutex
	recs *[]logged
}

func newCapture() capture { return capture{mu: &sync.Mutex{}, recs: &[]logged{}} }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }
func (c capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c capture) WithGroup(string) slog.Handler            { return c }
func (c capture) Handle(_ context.Context, r slog.Record) error {
	l := logged{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.recs = append(*c.recs, l)
	return nil
}

func (c capture) records() []logged {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]logged(nil), *c.recs...)
}

// A task that fails its attempts writes a DEBUG line per retried attempt
// and exactly one ERROR line for its dead letter, with its type, id,
// attempt, limit and cause, to the Mux's logger; the dead-letter hook
// runs once for it, with its Info and error.
func TestFailuresLogged(t *testing.T) {
	t.Parallel()
	logs := newCapture()
	var mu sync.Mutex
	var hooked []tasks.Info
	var causes []error
	hook := func(_ context.Context, task tasks.Info, cause error) {
		mu.Lock()
		defer mu.Unlock()
		hooked, causes = append(hooked, task), append(causes, cause)
	}
	b := setup(t, nil, fastRetries, tasks.WithLogger(slog.New(logs)), tasks.WithDeadLetterHook(hook))
	failing := errors.New("the upstream refused")
	mustHandle(t, b.mux, "fails", func(context.Context, int) (int, error) { return 0, failing })
	mustHandle(t, b.mux, "works", func(context.Context, int) (int, error) { return 1, nil })
	id := mustEnqueue(t, b.client, "fails", 1)
	mustEnqueue(t, b.client, "works", 1)
	b.drive(t, "the task dead", func() bool {
		d, err := b.q.Depth(context.Background())
		return err == nil && d.Dead == 1 && d.Pending == 0
	})

	var retried, dead []logged
	for _, r := range logs.records() {
		switch {
		case r.level == slog.LevelDebug && r.attrs["task_id"] == id:
			retried = append(retried, r)
		case r.level >= slog.LevelWarn:
			dead = append(dead, r)
		}
	}
	if len(retried) != 2 || len(dead) != 1 {
		t.Fatalf("lines: %d DEBUG of retries, %d at WARN or above (%+v); want 2 and 1", len(retried), len(dead), logs.records())
	}
	want := map[string]string{"task_type": "fails", "task_id": id, "queue": b.q.Name(), "attempt": "3", "max_attempts": "3", "error": failing.Error()}
	for k, v := range want {
		if got := dead[0].attrs[k]; got != v {
			t.Errorf("dead letter's line %q: %s = %q, want %q", dead[0].msg, k, got, v)
		}
	}
	if dead[0].level != slog.LevelError {
		t.Errorf("dead letter's line at %v, want ERROR", dead[0].level)
	}
	if got := retried[1].attrs["attempt"]; got != "2" {
		t.Errorf("second retry's line: attempt %q, want 2", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 1 || hooked[0].ID != id || hooked[0].Type != "fails" || hooked[0].Attempt != 3 || !errors.Is(causes[0], failing) {
		t.Errorf("the hook got %+v, %v; want task %s once, with its error", hooked, causes, id)
	}
}

// A task that no handler serves is reported too, with its type, and a
// panicking hook is recovered and logged.
func TestFailuresBeforeAHandlerLogged(t *testing.T) {
	t.Parallel()
	logs := newCapture()
	hook := func(context.Context, tasks.Info, error) { panic("the tracker broke") }
	b := setup(t, nil, fastRetries, tasks.WithLogger(slog.New(logs)), tasks.WithDeadLetterHook(hook))
	id, err := enqueue(context.Background(), b.client, "nobody", 1, tasks.Attempts(1))
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "the task dead", func() bool { d, err := b.q.Depth(context.Background()); return err == nil && d.Dead == 1 })
	var lines, hookPanics int
	for _, r := range logs.records() {
		switch {
		case r.attrs["task_id"] == id && r.attrs["panic"] != "":
			hookPanics++
		case r.attrs["task_id"] == id:
			lines++
			if r.level != slog.LevelError || r.attrs["task_type"] != "nobody" || r.attrs["error"] != tasks.ErrUnknownType.Error()+": nobody" {
				t.Errorf("unknown type's line: %v %q %v", r.level, r.msg, r.attrs)
			}
		}
	}
	if lines != 1 || hookPanics != 1 {
		t.Errorf("%d lines of the dead letter and %d of the hook's panic, want 1 and 1: %+v", lines, hookPanics, logs.records())
	}
}

// A task whose handler hangs past its lease at its last attempt is
// dead-lettered by another process's claim, which writes the one ERROR
// line of that dead letter (type, id, attempt, limit, cause) and runs its
// hook once; the hung handler, failing at last, writes an INFO line only:
// its outcome is thrown away.
func TestExpiredLeaseDeadLetterLoggedOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: 300 * time.Millisecond, MaxAttempts: 1}
	type process struct {
		*bundle
		logs capture
		mu   sync.Mutex
		hook []tasks.Info
		errs []error
	}
	release, started := make(chan struct{}), make(chan struct{})
	hang := func(context.Context, int) (int, error) {
		close(started)
		<-release // the context's end is ignored, as by a stuck call
		return 0, errors.New("gave up late")
	}
	var procs [2]*process
	for i := range procs {
		p := &process{logs: newCapture()}
		hook := func(_ context.Context, task tasks.Info, cause error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.hook, p.errs = append(p.hook, task), append(p.errs, cause)
		}
		p.bundle = setup(t, srv.Client(t), cfg, tasks.WithLogger(slog.New(p.logs)), tasks.WithDeadLetterHook(hook))
		mustHandle(t, p.mux, "hangs", hang)
		procs[i] = p
	}
	hung, other := procs[0], procs[1]
	id := mustEnqueue(t, hung.client, "hangs", 1)
	ran := make(chan error, 1)
	go func() {
		_, err := hung.job.Run(context.Background())
		ran <- err
	}()
	<-started
	time.Sleep(cfg.Lease) // past the lease, give or take the claim's trip
	other.drive(t, "the hung task dead", func() bool {
		d, err := other.q.Depth(context.Background())
		return err == nil && d.Dead == 1
	})
	close(release)
	<-ran

	var lines []logged
	for _, p := range procs {
		for _, r := range p.logs.records() {
			if r.level >= slog.LevelWarn {
				lines = append(lines, r)
			}
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines at WARN or above, want 1: %+v", len(lines), lines)
	}
	want := map[string]string{"task_type": "hangs", "task_id": id, "queue": other.q.Name(), "attempt": "1", "max_attempts": "1"}
	for k, v := range want {
		if got := lines[0].attrs[k]; got != v {
			t.Errorf("dead letter's line %q: %s = %q, want %q", lines[0].msg, k, got, v)
		}
	}
	if e := lines[0].attrs["error"]; lines[0].level != slog.LevelError || !strings.Contains(e, "lease expired at attempt 1 of 1") {
		t.Errorf("dead letter's line at %v with error %q, want ERROR naming the expired lease", lines[0].level, e)
	}
	if recs := other.logs.records(); len(recs) != 1 {
		t.Errorf("the claiming process wrote %+v, want its one line", recs)
	}
	late := 0
	for _, r := range hung.logs.records() {
		if r.level == slog.LevelInfo && r.attrs["task_id"] == id && strings.Contains(r.attrs["error"], "gave up late") {
			late++
		}
	}
	if late != 1 {
		t.Errorf("the hung process wrote %+v, want one INFO line of its late failure", hung.logs.records())
	}
	hung.mu.Lock()
	defer hung.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(hung.hook) != 0 || len(other.hook) != 1 || other.hook[0].ID != id || other.hook[0].Type != "hangs" ||
		!errors.Is(other.errs[0], queue.ErrLeaseLost) {
		t.Errorf("hooks: the hung process's got %+v, the other's %+v %v; want the other's alone, once, with ErrLeaseLost", hung.hook, other.hook, other.errs)
	}
}
