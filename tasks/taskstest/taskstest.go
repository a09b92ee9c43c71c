package taskstest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// Task is a task that a queue holds, pending or delayed, as its
// enqueuer's code made it.
type Task struct {
	ID    string
	Type  string
	Codec string // the codec's name: "json" by default
	Args  []byte // encoded with Codec; see [Args]
	// Due is when a delayed task (tasks.Delay) becomes pending, by
	// Redis's clock; zero for a pending task.
	Due time.Time
	// MaxAttempts is its own attempt limit (tasks.Attempts); 0: the
	// queue's.
	MaxAttempts int
	// Unique is the unique key it holds, as given to tasks.Unique; "" for
	// none.
	Unique string
	// ChainStep and ChainSteps place a chain's step; zero for a task on
	// its own.
	ChainStep, ChainSteps int
}

// Tasks returns the tasks q holds, pending ones first, the oldest first,
// then delayed ones, the soonest due first. An item that is not a task
// fails t.
func Tasks(t testing.TB, q *queue.Queue) []Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := qstore.Of(q)
	unique, err := st.UniqueHolders(ctx)
	if err != nil {
		t.Fatalf("taskstest: %v", err)
	}
	var out []Task
	for _, state := range []qstore.State{qstore.StatePending, qstore.StateDelayed} {
		for offset := 0; ; {
			items, total, err := st.List(ctx, state, offset, qstore.BatchMax, q.Config().MaxPayload)
			if err != nil {
				t.Fatalf("taskstest: %v", err)
			}
			for _, it := range items {
				if it.Size == 0 {
					continue // a canceled task's id, until a claim drops it
				}
				env, err := taskenv.Decode(it.Payload)
				if err != nil {
					t.Fatalf("taskstest: %s item %s is not a task: %v", state, it.ID, err)
				}
				task := Task{ID: it.ID, Type: env.Type, Codec: env.Codec, Args: env.Args, MaxAttempts: it.MaxAttempts, Unique: userKey(unique[it.ID])}
				if state == qstore.StateDelayed {
					task.Due = it.At
				}
				if env.Chain != nil {
					task.ChainStep, task.ChainSteps = env.Chain.Step, env.Chain.Steps
					if env.Chain.Unique != "" {
						task.Unique = userKey(env.Chain.Unique)
					}
				}
				out = append(out, task)
			}
			offset += len(items)
			if len(items) == 0 || int64(offset) >= total {
				break
			}
		}
	}
	return out
}

// userKey is the key a tasks.Unique was given: package tasks stores it
// as "TYPE:KEY", and a type has no ':'.
func userKey(stored string) string {
	_, key, _ := strings.Cut(stored, ":")
	return key
}

// Args decodes task's arguments into an A with codec, the one the
// application's [tasks.Client] uses; nil is the default, JSON. A codec
// of another name fails t.
func Args[A any](t testing.TB, task Task, codec tasks.Codec) A {
	t.Helper()
	var args A
	var err error
	switch {
	case codec == nil && task.Codec == "json":
		err = json.Unmarshal(task.Args, &args)
	case codec == nil || codec.Name() != task.Codec:
		err = fmt.Errorf("it was encoded with codec %q", task.Codec)
	default:
		err = codec.Unmarshal(task.Args, &args)
	}
	if err != nil {
		t.Fatalf("taskstest: the arguments of %s task %s into %T: %v", task.Type, task.ID, args, err)
	}
	return args
}

// RunReport is what [Run] did.
type RunReport struct {
	Slices int // calls of the job's Run
	Items  int // items the slices worked (acked, retried or dead-lettered)
	// Depth is the queue's after the last slice: Dead holds the tasks
	// that failed their last attempt, Delayed the retries and delayed
	// tasks not yet due.
	Depth queue.Depth
}

// runMax bounds the slices of one Run, so that a job that never ends (a
// handler that enqueues itself) fails the test instead of hanging it.
const runMax = 10_000

// Run calls job's Run (a Mux's job of q, or a jobs.Drain) in this
// goroutine until q has nothing pending or due and the job reports no
// backlog: the tasks the application enqueued, and those their handlers
// enqueued (a chain's next steps, a fan-out's final), all run before Run
// returns. A slice's error fails t; a handler's error does not (the queue
// retries its task or dead-letters it: see RunReport.Depth).
func Run(t testing.TB, q *queue.Queue, job recruiter.Job) RunReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rep RunReport
	for {
		d, err := q.Depth(ctx)
		if err != nil {
			t.Fatalf("taskstest: %v", err)
		}
		rep.Depth = d
		if d.Pending == 0 && d.Due == 0 && d.Expired == 0 {
			return rep
		}
		if rep.Slices == runMax {
			t.Fatalf("taskstest: the job ran %d slices and the queue still holds %+v: a handler that enqueues without end?", runMax, d)
		}
		r, err := job.Run(ctx)
		rep.Slices++
		rep.Items += r.Items
		if err != nil {
			t.Fatalf("taskstest: slice %d of %s: %v", rep.Slices, job.Name(), err)
		}
	}
}
