package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/recruiter"
)

func mustHash(t testing.TB, rdb redis.Scripter, key string) *exphash.Hash {
	t.Helper()
	h, err := exphash.New(rdb, key)
	if err != nil {
		t.Fatalf("exphash.New(%q): %v", key, err)
	}
	return h
}

// setFields sets prefix0..prefix(n-1) to "v:"+field with the given ttl.
func setFields(t testing.TB, h *exphash.Hash, prefix string, n int, ttl time.Duration) {
	t.Helper()
	for i := range n {
		f := prefix + strconv.Itoa(i)
		if err := h.Set(context.Background(), f, []byte("v:"+f), ttl); err != nil {
			t.Fatalf("Set(%q): %v", f, err)
		}
	}
}

// waitExpired waits until a field set with ttl 1ms just now has expired.
func waitExpired(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	untilRedisTime(t, rdb, redisNow(t, rdb).Add(2*time.Millisecond))
}

// 1,000 expired and 1,000 live fields, batches of 100, one batch a slice:
// ten full slices with More, then none; the live fields are intact.
func TestEvictExpiredIsBoundedPerBatch(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	key := testPrefix(t)
	h := mustHash(t, rdb, key)
	setFields(t, h, "old-", 1000, time.Millisecond)
	setFields(t, h, "live-", 1000, time.Hour)
	waitExpired(t, rdb)
	job, err := jobs.EvictExpired(h, jobs.EvictConfig{Batching: jobs.Batching{Batch: 100, MaxBatches: 1}})
	if err != nil {
		t.Fatal(err)
	}
	values, expiry := h.Keys()
	for i := range 10 {
		wantReport(t, mustSlice(t, job, time.Second), recruiter.Report{Items: 100, More: true}, "slice "+strconv.Itoa(i))
		if n := rdb.HLen(ctx, values).Val(); n != int64(2000-100*(i+1)) {
			t.Fatalf("after slice %d: %d fields, want %d", i, n, 2000-100*(i+1))
		}
	}
	wantReport(t, mustSlice(t, job, time.Second), recruiter.Report{}, "nothing expired")
	all, err := rdb.HGetAll(ctx, values).Result()
	if err != nil || len(all) != 1000 || rdb.ZCard(ctx, expiry).Val() != 1000 {
		t.Fatalf("left: %d fields (%v), %d expiries; want the 1000 live ones", len(all), err, rdb.ZCard(ctx, expiry).Val())
	}
	for i := range 1000 {
		f := "live-" + strconv.Itoa(i)
		if all[f] != "v:"+f {
			t.Fatalf("live field %s = %q after eviction", f, all[f])
		}
	}
}

// One slice with a budget evicts everything expired, in batches: each
// script call removes at most Batch fields.
func TestEvictExpiredSliceRunsBatches(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	key := testPrefix(t)
	h := mustHash(t, rdb, key)
	setFields(t, h, "old-", 1000, time.Millisecond)
	setFields(t, h, "live-", 10, time.Hour)
	waitExpired(t, rdb)
	replies := &scriptReplies{}
	rdb.AddHook(replies)
	job, err := jobs.EvictExpired(h, jobs.EvictConfig{Batching: jobs.Batching{Batch: 100}})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 1000, More: false}, "one slice")
	want := []int64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0}
	if got := replies.get(); !slices.Equal(got, want) {
		t.Fatalf("script replies %v, want %v", got, want)
	}
}

// A field set again with a later expiry is kept: reading the expired
// fields and removing them is one script, so nothing can be set between
// the two. The test does not leave that interleaving to chance: a hook on
// the job's client sets the longest-expired field again after every
// command the job sends, so an eviction that read in one call and removed
// in another would remove a field set again every time
// (TestSetAgainCatchesTwoStepEviction proves it).
func TestEvictExpiredKeepsFieldsSetAgain(t *testing.T) {
	t.Parallel()
	if err := checkKeepsFieldsSetAgain(t, func(rdb *redis.Client, key string) (recruiter.Job, error) {
		return jobs.EvictExpired(mustHash(t, rdb, key), jobs.EvictConfig{Batching: jobs.Batching{Batch: 10, MaxBatches: 1}})
	}); err != nil {
		t.Fatal(err)
	}
}

// The check above fails, every time, for an eviction that reads the
// expired fields with one command and removes them with another.
func TestSetAgainCatchesTwoStepEviction(t *testing.T) {
	t.Parallel()
	for run := range 3 {
		err := checkKeepsFieldsSetAgain(t, func(rdb *redis.Client, key string) (recruiter.Job, error) {
			values, expiry := mustHash(t, rdb, key).Keys()
			return recruiter.Func("two-step-evict", func(ctx context.Context) (recruiter.Report, error) {
				fields, err := expiredFields(ctx, rdb, expiry, 10)
				if err != nil || len(fields) == 0 {
					return recruiter.Report{}, err
				}
				if err := rdb.HDel(ctx, values, fields...).Err(); err != nil {
					return recruiter.Report{}, err
				}
				err = rdb.ZRem(ctx, expiry, fields).Err()
				return recruiter.Report{Items: len(fields), More: len(fields) == 10}, err
			}), nil
		})
		if err == nil {
			t.Fatalf("run %d: a two-step eviction passed the check", run)
		}
	}
}

// expiredFields reads up to n expired fields of an exphash.Hash, the
// longest expired first, as of Redis's clock.
func expiredFields(ctx context.Context, rdb *redis.Client, expiry string, n int64) ([]string, error) {
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	return rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: expiry, ByScore: true, Start: "-inf", Stop: now.UnixMilli(), Count: n,
	}).Result()
}

// checkKeepsFieldsSetAgain fills an exphash.Hash with 400 expired fields
// and sets one of them again just before the job starts; then it runs the
// job made by newJob until it reports no More, while a hook on the job's
// client sets the longest-expired field again after every command the job
// sends. It returns what the job got wrong: every field set again must be
// kept, every other one evicted.
func checkKeepsFieldsSetAgain(t *testing.T, newJob func(rdb *redis.Client, key string) (recruiter.Job, error)) error {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := testContext(t)
	key := testPrefix(t)
	h := mustHash(t, rdb, key)
	values, expiry := h.Keys()
	setFields(t, h, "f", 400, time.Millisecond)
	waitExpired(t, rdb)
	setAgain := map[string]bool{"f399": true}
	if err := h.Set(ctx, "f399", []byte("renewed"), time.Hour); err != nil {
		t.Fatal(err)
	}
	jobRdb := srv.Client(t)
	hook := &afterEachCommand{do: func() error {
		head, err := expiredFields(ctx, rdb, expiry, 1)
		if err != nil || len(head) == 0 {
			return err
		}
		setAgain[head[0]] = true // only the job's goroutine runs the hook
		return h.Set(ctx, head[0], []byte("renewed"), time.Hour)
	}}
	jobRdb.AddHook(hook)
	job, err := newJob(jobRdb, key)
	if err != nil {
		t.Fatal(err)
	}
	evicted := 0
	for {
		rep := mustSlice(t, job, 10*time.Second)
		evicted += rep.Items
		if !rep.More {
			break
		}
	}
	evicted += mustSlice(t, job, 10*time.Second).Items
	if err := hook.failed(); err != nil {
		t.Fatalf("setting fields again: %v", err)
	}
	if len(setAgain) < 2 {
		t.Fatalf("the hook set %d fields again, want some", len(setAgain)-1)
	}
	all, err := rdb.HGetAll(ctx, values).Result()
	if err != nil {
		t.Fatal(err)
	}
	var problems []error
	for i := range 400 {
		f := "f" + strconv.Itoa(i)
		if got, ok := all[f]; setAgain[f] && got != "renewed" {
			problems = append(problems, fmt.Errorf("field %s, set again after it expired, = %q, %v; want it kept", f, got, ok))
		} else if !setAgain[f] && ok {
			problems = append(problems, fmt.Errorf("expired field %s = %q; want it evicted", f, got))
		}
	}
	if len(all) != len(setAgain) || evicted != 400-len(setAgain) {
		problems = append(problems, fmt.Errorf("%d fields left, %d evicted; want %d left, %d evicted",
			len(all), evicted, len(setAgain), 400-len(setAgain)))
	}
	return errors.Join(problems...)
}

// afterEachCommand is a go-redis hook that calls do after every command
// and pipeline the client sends, and keeps do's first error.
type afterEachCommand struct {
	do func() error

	mu  sync.Mutex
	err error
}

func (h *afterEachCommand) after() {
	err := h.do()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

func (h *afterEachCommand) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *afterEachCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterEachCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after()
		return err
	}
}

func (h *afterEachCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after()
		return err
	}
}

func TestEvictExpiredMembers(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	key := testPrefix(t) + ":presence"
	now := redisNow(t, rdb)
	for i := range 300 {
		rdb.ZAdd(ctx, key,
			redis.Z{Score: float64(now.Add(-time.Minute).UnixMilli() + int64(i)), Member: "gone-" + strconv.Itoa(i)},
			redis.Z{Score: float64(now.Add(time.Hour).UnixMilli()), Member: "here-" + strconv.Itoa(i)})
	}
	// Raised from expired to live just before the slices: kept.
	rdb.ZAdd(ctx, key, redis.Z{Score: float64(now.Add(time.Hour).UnixMilli()), Member: "gone-299"})
	job, err := jobs.EvictExpiredMembers(rdb, key, jobs.EvictConfig{Batching: jobs.Batching{Batch: 100, MaxBatches: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []recruiter.Report{{Items: 100, More: true}, {Items: 100, More: true}, {Items: 99}, {}} {
		wantReport(t, mustSlice(t, job, time.Second), want, "slice "+strconv.Itoa(i))
	}
	left := rdb.ZRange(ctx, key, 0, -1).Val()
	if len(left) != 301 {
		t.Fatalf("%d members left, want 301", len(left))
	}
	for _, m := range left {
		if m != "gone-299" && m[:5] != "here-" {
			t.Errorf("member %s left, want it evicted", m)
		}
	}
}

// Scores in seconds (time.Now().Unix()) with ScoreUnit: a second.
func TestEvictExpiredMembersInSeconds(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	key := testPrefix(t) + ":sessions"
	now := redisNow(t, rdb).Unix()
	rdb.ZAdd(ctx, key,
		redis.Z{Score: float64(now - 5), Member: "old"},
		redis.Z{Score: float64(now - 1), Member: "just-expired"},
		redis.Z{Score: float64(now + 3600), Member: "live"})
	// Read as milliseconds, these scores are in 1970: all would go. Hence
	// ScoreUnit; shown on a copy.
	if err := rdb.Copy(ctx, key, key+":copy", 0, false).Err(); err != nil {
		t.Fatal(err)
	}
	ms, err := jobs.EvictExpiredMembers(rdb, key+":copy", jobs.EvictConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, ms, time.Second), recruiter.Report{Items: 3}, "scores read as milliseconds")
	sec, err := jobs.EvictExpiredMembers(rdb, key, jobs.EvictConfig{ScoreUnit: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, sec, time.Second), recruiter.Report{Items: 2}, "scores in seconds")
	if left := rdb.ZRange(ctx, key, 0, -1).Val(); len(left) != 1 || left[0] != "live" {
		t.Fatalf("left %v, want [live]", left)
	}
}

// scriptReplies records the integer replies of the scripts a client runs.
type scriptReplies struct {
	mu      sync.Mutex
	replies []int64
}

func (h *scriptReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			if n, ok := cmd.(*redis.Cmd).Val().(int64); ok && err == nil {
				h.mu.Lock()
				h.replies = append(h.replies, n)
				h.mu.Unlock()
			}
		}
		return err
	}
}

func (h *scriptReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *scriptReplies) get() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.replies...)
}
