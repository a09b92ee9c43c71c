package tasks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/tasks"
)

// trail records what middleware saw, in order.
type trail struct {
	mu   sync.Mutex
	seen []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen = append(tr.seen, s)
}

func (tr *trail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.seen...)
}

// named is a middleware that notes, around the handler, its name, the
// task's type from its Info, and the attempt's error.
func named(tr *trail, name string) tasks.Middleware {
	return func(next tasks.Handler) tasks.Handler {
		return func(ctx context.Context, typ string, args []byte) ([]byte, error) {
			info, _ := tasks.InfoFrom(ctx)
			tr.add(name + " before " + info.Type)
			result, err := next(ctx, typ, args)
			switch {
			case errors.Is(err, jobs.ErrHandlerPanic):
				tr.add(name + " after " + typ + ": panic")
			case err != nil:
				tr.add(name + " after " + typ + ": " + err.Error())
			default:
				tr.add(name + " after " + typ)
			}
			return result, err
		}
	}
}

// Middleware wraps every handler, typed, Raw and HandleUnknown's, the
// first added outermost; it sees the task's Info and a panic as the
// attempt's error; middleware added after the job was made wraps the
// tasks that start after it, registered before or after it.
func TestMiddlewareOrderAndReach(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	tr := &trail{}
	if err := b.mux.Use(named(tr, "a"), named(tr, "b")); err != nil {
		t.Fatal(err)
	}
	mustHandle(t, b.mux, "typed", func(context.Context, int) (int, error) { tr.add("handler"); return 1, nil })
	mustHandle(t, b.mux, "panics", func(context.Context, int) (int, error) { panic("boom") })
	if err := b.mux.HandleUnknown(func(context.Context, string, []byte) ([]byte, error) { tr.add("unknown"); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	oneBatch(t, b)
	run := func(typ string) []string {
		t.Helper()
		tr.mu.Lock()
		tr.seen = nil
		tr.mu.Unlock()
		if _, err := tasks.Define[int, int](typ).Enqueue(context.Background(), b.client, 1, tasks.Attempts(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.job.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		return tr.get()
	}
	for _, c := range []struct {
		typ  string
		want string
	}{
		{"typed", "a before typed|b before typed|handler|b after typed|a after typed"},
		{"mystery", "a before mystery|b before mystery|unknown|b after mystery|a after mystery"},
		{"panics", "a before panics|b before panics|b after panics: panic|a after panics: panic"},
	} {
		if got := strings.Join(run(c.typ), "|"); got != c.want {
			t.Errorf("%s: middleware saw %q, want %q", c.typ, got, c.want)
		}
	}

	// Added while the job exists: the next task runs inside it, also for
	// a type registered afterwards.
	if err := b.mux.Use(named(tr, "c")); err != nil {
		t.Fatal(err)
	}
	mustHandle(t, b.mux, "late", func(context.Context, int) (int, error) { tr.add("handler"); return 1, nil })
	if got, want := strings.Join(run("typed"), "|"), "a before typed|b before typed|c before typed|handler|c after typed|b after typed|a after typed"; got != want {
		t.Errorf("typed after a later Use: %q, want %q", got, want)
	}
	if got, want := strings.Join(run("late"), "|"), "a before late|b before late|c before late|handler|c after late|b after late|a after late"; got != want {
		t.Errorf("a type registered after Use: %q, want %q", got, want)
	}

	nilHandler := func(tasks.Handler) tasks.Handler { return nil }
	for what, err := range map[string]error{
		"nil Mux":        (*tasks.Mux)(nil).Use(named(tr, "x")),
		"nil middleware": b.mux.Use(nil),
		"nil Handler":    b.mux.Use(nilHandler),
	} {
		if !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("Use with %s: %v, want ErrInvalidArgument", what, err)
		}
	}
	// On a Mux without handlers it is refused at the first registration.
	m := tasks.NewMux()
	if err := m.Use(nilHandler); err != nil {
		t.Fatal(err)
	}
	if err := handle(m, "typed", func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("Handle under a middleware returning nil: %v, want ErrInvalidArgument", err)
	}
	// The refused Use added nothing.
	if got, want := strings.Join(run("typed"), "|"), "a before typed|b before typed|c before typed|handler|c after typed|b after typed|a after typed"; got != want {
		t.Errorf("after refused Uses: %q, want %q", got, want)
	}
}
