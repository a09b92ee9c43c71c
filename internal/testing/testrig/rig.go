// Package testrig holds what this repository's tests share, in every
// module: waiting for a condition, a test's context, the fast exits that
// recruit, and a queue's dead letters.
package testrig

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Eventually polls cond every 5ms until it holds, failing the test after
// within. On failure it prints what, then what each of more returns (the
// state that explains it). It is for waiting on Redis, other goroutines
// or other processes; cond may act too (enlist, say), once per poll.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool, more ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			msg := what
			for _, m := range more {
				msg += "\n" + m()
			}
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Context is a context that ends after d or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Traffic enlists rec every interval, as a busy server's fast exits would,
// until the returned stop is called; stop waits for the last enlistment.
func Traffic(rec *recruiter.Recruiter, every time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				rec.Enlist(context.Background())
			}
		}
	}()
	return func() { close(quit); <-done }
}

// DeadLetters lists up to max (1 to queue.BatchMax) of q's dead letters,
// the oldest first, each with its cause, attempts and death time (At), as
// inspect.Inspector.Items reads them, without payloads.
func DeadLetters(ctx context.Context, q *queue.Queue, max int) ([]qstore.ItemInfo, error) {
	items, _, err := qstore.Of(q).List(ctx, qstore.StateDead, 0, max, 0)
	return items, err
}
