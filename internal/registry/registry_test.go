package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/registry"
)

// A queue noted again with the same config after it was written is not
// written again; one with a new config is.
func TestNoteQueueWritesOnce(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := registry.Queue{Name: "mail", LeaseMS: 30000, MaxAttempts: 5}
	registry.NoteQueue(rdb, "p", q)
	if !registry.Pending(rdb) {
		t.Fatal("a noted queue is not pending")
	}
	if err := registry.Write(ctx, rdb, "p", nil); err != nil {
		t.Fatal(err)
	}
	registry.NoteQueue(rdb, "p", q)
	if registry.Pending(rdb) {
		t.Fatal("the same queue, noted again after its write, is pending")
	}
	q.MaxAttempts = 9
	registry.NoteQueue(rdb, "p", q)
	if !registry.Pending(rdb) {
		t.Fatal("a queue whose config changed is not pending")
	}
	if err := registry.Write(ctx, rdb, "p", []registry.Job{{Name: "j", BudgetMS: 50, Rate: 0.5}}); err != nil {
		t.Fatal(err)
	}
	snap, err := registry.Read(ctx, rdb, "p")
	if err != nil || len(snap.Queues) != 1 || snap.Queues[0].MaxAttempts != 9 || snap.Queues[0].RegisteredMS == 0 ||
		len(snap.Jobs) != 1 || snap.Jobs[0].Rate != 0.5 {
		t.Fatalf("Read = %+v, %v", snap, err)
	}
}

// A write that fails keeps its notes for the next.
func TestWriteFailureKeepsNotes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	registry.NoteQueue(rdb, "p", registry.Queue{Name: "q"})
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := registry.Write(ctx, rdb, "p", nil); err == nil {
		t.Fatal("Write to a killed server succeeded")
	}
	if !registry.Pending(rdb) {
		t.Fatal("the failed write dropped its notes")
	}
}
