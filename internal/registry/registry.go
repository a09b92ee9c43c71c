package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Keys returns the registry's keys under prefix: queues, jobs, types.
func Keys(prefix string) (queues, jobs, types string) {
	tag := "{" + prefix + ":registry}"
	return tag + ":queues", tag + ":jobs", tag + ":types"
}

// Queue is a queue's entry: its config as its process set it.
type Queue struct {
	Name         string `json:"name"`
	LeaseMS      int64  `json:"lease_ms"`
	MaxAttempts  int    `json:"max_attempts"`
	RetentionMS  int64  `json:"result_retention_ms"`
	RegisteredMS int64  `json:"registered_ms"` // unix ms, by the registering process's clock
}

// Job is a job's entry: its JobConfig.
type Job struct {
	Name         string  `json:"name"`
	BudgetMS     int64   `json:"budget_ms"`
	EveryMS      int64   `json:"every_ms,omitempty"`
	Rate         float64 `json:"rate,omitempty"`
	Schedule     string  `json:"schedule,omitempty"`
	RegisteredMS int64   `json:"registered_ms"`
}

// Type is a task type served by a Mux's job on a queue.
type Type struct {
	Queue        string `json:"queue"`
	Type         string `json:"type"`
	Codec        string `json:"codec"`
	RegisteredMS int64  `json:"registered_ms"`
}

// notes are what this process made and has not written yet, by client.
var notes = struct {
	sync.Mutex
	queues map[redis.UniversalClient]map[string]noteQueue // by client, then prefix + name
	types  map[redis.UniversalClient]map[string]noteTypes // by client, then prefix + queue
	// written are the queues written, so that a program that makes the
	// same queue again and again (per request, say) writes it once.
	written map[redis.UniversalClient]map[string]Queue
}{}

type noteQueue struct {
	prefix string
	q      Queue
}

type noteTypes struct {
	prefix, queue, codec string
	types                func() []string // read at write time: types handled after the job was made are written too
}

// notesMax bounds the notes of one client: a program that makes queues
// without end (a fuzz test) must not grow this process's memory.
const notesMax = 256

// NoteQueue notes a queue made with rdb, for the next [Write] with rdb.
// It makes no Redis call.
func NoteQueue(rdb redis.UniversalClient, prefix string, q Queue) {
	notes.Lock()
	defer notes.Unlock()
	if notes.written[rdb][prefix+":"+q.Name] == q {
		return
	}
	if notes.queues == nil {
		notes.queues = map[redis.UniversalClient]map[string]noteQueue{}
	}
	m := notes.queues[rdb]
	if m == nil {
		m = map[string]noteQueue{}
		notes.queues[rdb] = m
	}
	if len(m) < notesMax {
		m[prefix+":"+q.Name] = noteQueue{prefix: prefix, q: q}
	}
}

// NoteTypes notes the task types that a Mux's job serves on queue, for
// the next [Write] with rdb; types is called then.
func NoteTypes(rdb redis.UniversalClient, prefix, queue, codec string, types func() []string) {
	notes.Lock()
	defer notes.Unlock()
	if notes.types == nil {
		notes.types = map[redis.UniversalClient]map[string]noteTypes{}
	}
	m := notes.types[rdb]
	if m == nil {
		m = map[string]noteTypes{}
		notes.types[rdb] = m
	}
	if len(m) < notesMax {
		m[prefix+":"+queue] = noteTypes{prefix: prefix, queue: queue, codec: codec, types: types}
	}
}

// Pending reports whether notes made with rdb wait for a Write.
func Pending(rdb redis.UniversalClient) bool {
	notes.Lock()
	defer notes.Unlock()
	return len(notes.queues[rdb]) > 0 || len(notes.types[rdb]) > 0
}

// Write writes jobs (under prefix) and the notes made with rdb, in one
// pipeline; the notes are dropped once written, kept if the write fails.
func Write(ctx context.Context, rdb redis.UniversalClient, prefix string, jobs []Job) error {
	notes.Lock()
	qs, ts := notes.queues[rdb], notes.types[rdb]
	delete(notes.queues, rdb)
	delete(notes.types, rdb)
	notes.Unlock()

	now := time.Now().UnixMilli()
	pipe := rdb.Pipeline()
	n := 0
	hset := func(key, field string, v any) {
		b, _ := json.Marshal(v) // plain structs: never fails
		pipe.HSet(ctx, key, field, b)
		n++
	}
	for _, j := range jobs {
		_, key, _ := Keys(prefix)
		j.RegisteredMS = now
		hset(key, j.Name, j)
	}
	for _, nq := range qs {
		key, _, _ := Keys(nq.prefix)
		q := nq.q
		q.RegisteredMS = now
		hset(key, q.Name, q)
	}
	for _, nt := range ts {
		_, _, key := Keys(nt.prefix)
		for _, typ := range nt.types() {
			hset(key, nt.queue+"/"+typ, Type{Queue: nt.queue, Type: typ, Codec: nt.codec, RegisteredMS: now})
		}
	}
	if n == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	switch {
	case err == nil:
		markWritten(rdb, qs)
	case !errors.Is(err, redis.ErrClosed):
		restore(rdb, qs, ts)
	}
	return err
}

func markWritten(rdb redis.UniversalClient, qs map[string]noteQueue) {
	if len(qs) == 0 {
		return
	}
	notes.Lock()
	defer notes.Unlock()
	if notes.written == nil {
		notes.written = map[redis.UniversalClient]map[string]Queue{}
	}
	m := notes.written[rdb]
	if m == nil {
		m = map[string]Queue{}
		notes.written[rdb] = m
	}
	for k, nq := range qs {
		if len(m) < notesMax {
			m[k] = nq.q
		}
	}
}

// restore puts back notes that a failed Write took, unless newer ones
// took their place meanwhile.
func restore(rdb redis.UniversalClient, qs map[string]noteQueue, ts map[string]noteTypes) {
	for _, nq := range qs {
		NoteQueue(rdb, nq.prefix, nq.q)
	}
	for _, nt := range ts {
		NoteTypes(rdb, nt.prefix, nt.queue, nt.codec, nt.types)
	}
}

// Snapshot is the registry of one prefix, each list sorted by name.
type Snapshot struct {
	Queues []Queue
	Jobs   []Job
	Types  []Type
}

// Read reads the registry under prefix in one pipeline (HGETALL ×3). An
// entry that does not decode is skipped, with its name kept.
func Read(ctx context.Context, rdb redis.UniversalClient, prefix string) (Snapshot, error) {
	qk, jk, tk := Keys(prefix)
	pipe := rdb.Pipeline()
	qc, jc, tc := pipe.HGetAll(ctx, qk), pipe.HGetAll(ctx, jk), pipe.HGetAll(ctx, tk)
	if _, err := pipe.Exec(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("registry: read %s: %w", prefix, err)
	}
	var s Snapshot
	for name, v := range qc.Val() {
		var q Queue
		_ = json.Unmarshal([]byte(v), &q)
		q.Name = name
		s.Queues = append(s.Queues, q)
	}
	for name, v := range jc.Val() {
		var j Job
		_ = json.Unmarshal([]byte(v), &j)
		j.Name = name
		s.Jobs = append(s.Jobs, j)
	}
	for field, v := range tc.Val() {
		var t Type
		_ = json.Unmarshal([]byte(v), &t)
		t.Queue, t.Type, _ = strings.Cut(field, "/")
		s.Types = append(s.Types, t)
	}
	slices.SortFunc(s.Queues, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Jobs, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Types, func(a, b Type) int {
		return cmp.Or(strings.Compare(a.Queue, b.Queue), strings.Compare(a.Type, b.Type))
	})
	return s, nil
}
