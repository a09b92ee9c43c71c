package tasks

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
)

// counting is a slog.Handler that counts records and keeps the attributes
// of those that count left-out lines.
type counting struct {
	mu     sync.Mutex
	lines  int
	counts []slog.Record
}

func (c *counting) Enabled(context.Context, slog.Level) bool { return true }
func (c *counting) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *counting) WithGroup(string) slog.Handler            { return c }
func (c *counting) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines++
	if r.NumAttrs() == 2 {
		c.counts = append(c.counts, r.Clone())
	}
	return nil
}

// 1,000 failures in a second, half of them dead letters, write at most
// 10 lines of each kind, then one line that counts the 980 left out; the
// dead-letter hook runs for each of the 500 dead letters.
func TestFailureLinesBounded(t *testing.T) {
	logs := &counting{}
	var hooked atomic.Int64
	m := NewMux(WithCodec(passCodec{}), WithLogger(slog.New(logs)),
		WithDeadLetterHook(func(context.Context, Info, error) { hooked.Add(1) }))
	var countLine func()
	now := time.Now()
	m.lines.now = func() time.Time { return now } // 1,000 failures in the same ms
	m.lines.countAfter = func(d time.Duration, f func()) {
		if d <= 0 || d > failureWindow {
			t.Errorf("the count line is due in %v, want within the window", d)
		}
		countLine = f
	}
	if err := Define[[]byte, []byte]("fails").Handle(m, func(context.Context, []byte) ([]byte, error) {
		return nil, errors.New("fails")
	}); err != nil {
		t.Fatal(err)
	}
	payload := taskenv.Envelope{Type: "fails", Codec: passCodec{}.Name()}.Encode()
	for i := range 1000 {
		it := qstore.Item{ID: "task", Attempt: 1 + i%2, MaxAttempts: 2, Payload: payload}
		if _, _, err := m.run(context.Background(), nil, it); err == nil {
			t.Fatal("a failing handler's run returned no error")
		}
	}
	if logs.lines != 2*failureLines || countLine == nil {
		t.Fatalf("%d lines, count line due: %v; want %d lines and a count line due", logs.lines, countLine != nil, 2*failureLines)
	}
	countLine()
	if logs.lines != 2*failureLines+1 || len(logs.counts) != 1 {
		t.Fatalf("%d lines after the count, want %d", logs.lines, 2*failureLines+1)
	}
	got := map[string]int64{}
	logs.counts[0].Attrs(func(a slog.Attr) bool { got[a.Key] = a.Value.Int64(); return true })
	if got["failures_left_out"] != 490 || got["dead_letters_left_out"] != 490 || logs.counts[0].Level != slog.LevelError {
		t.Errorf("count line %v at %v, want 490 of each at ERROR", got, logs.counts[0].Level)
	}
	// The next window writes lines again.
	now = now.Add(failureWindow)
	if _, _, err := m.run(context.Background(), nil, qstore.Item{ID: "task", Attempt: 1, MaxAttempts: 2, Payload: payload}); err == nil || logs.lines != 2*failureLines+2 {
		t.Errorf("a failure in the next window: %d lines, want %d", logs.lines, 2*failureLines+2)
	}
	if n := hooked.Load(); n != 500 {
		t.Errorf("the hook ran %d times, want once per dead letter, 500", n)
	}
}
