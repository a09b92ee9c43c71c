package jobs_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/recruiter"
)

func mustHash(t testing.TB, rdb redis.Scripter, key string) *jobs.ExpiringHash {
	t.Helper()
	h, err := jobs.NewExpiringHash(rdb, key)
	if err != nil {
		t.Fatalf("NewExpiringHash(%q): %v", key, err)
	}
	return h
}

// setFields sets prefix0..prefix(n-1) to "v:"+field with the given ttl.
func setFields(t testing.TB, h *jobs.ExpiringHash, prefix string, n int, ttl time.Duration) {
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

func TestExpiringHashSetGetDelete(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	h := mustHash(t, rdb, testPrefix(t))
	values, expiry := h.Keys()
	if err := h.Set(ctx, "a", []byte("A"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := h.Set(ctx, "b", []byte("B"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Get(ctx, "a"); string(v) != "A" || err != nil {
		t.Fatalf("Get(a) = %q, %v", v, err)
	}
	// Expiry by Redis's clock: one hour from its TIME, to the millisecond.
	now := redisNow(t, rdb)
	if at, err := rdb.ZScore(ctx, expiry, "a").Result(); err != nil || at < float64(now.Add(time.Hour-time.Second).UnixMilli()) || at > float64(now.Add(time.Hour).UnixMilli()) {
		t.Fatalf("expiry of a = %v, %v; want Redis time + 1h", at, err)
	}
	waitExpired(t, rdb)
	// Expired, not yet evicted: hidden from Get, still in Redis.
	if v, err := h.Get(ctx, "b"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Get(b) after its expiry = %q, %v; want ErrNotFound", v, err)
	}
	if ok, err := rdb.HExists(ctx, values, "b").Result(); !ok || err != nil {
		t.Fatalf("HEXISTS b = %v, %v; want it still there until evicted", ok, err)
	}
	// Set again: a new value and a new expiry.
	if err := h.Set(ctx, "b", []byte("B2"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Get(ctx, "b"); string(v) != "B2" || err != nil {
		t.Fatalf("Get(b) after a new Set = %q, %v", v, err)
	}
	// A field written without an expiry by other code never expires.
	rdb.HSet(ctx, values, "plain", "P")
	if v, err := h.Get(ctx, "plain"); string(v) != "P" || err != nil {
		t.Fatalf("Get(plain) = %q, %v", v, err)
	}
	if _, err := h.Get(ctx, "never-set"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Get(never-set) error %v, want ErrNotFound", err)
	}
	if n, err := h.Delete(ctx, "a", "b", "never-set"); n != 2 || err != nil {
		t.Fatalf("Delete = %d, %v; want 2", n, err)
	}
	if hlen, zcard := rdb.HLen(ctx, values).Val(), rdb.ZCard(ctx, expiry).Val(); hlen != 1 || zcard != 0 {
		t.Fatalf("after Delete: %d values, %d expiries; want only the plain field", hlen, zcard)
	}
}

// Delete takes any number of fields, a script call per BatchMax of them.
func TestExpiringHashDeleteMany(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	h := mustHash(t, rdb, testPrefix(t))
	fields := make([]string, jobs.BatchMax+2)
	for i := range fields {
		fields[i] = "f" + strconv.Itoa(i)
	}
	for _, f := range []string{fields[0], fields[jobs.BatchMax+1], "kept"} {
		if err := h.Set(ctx, f, []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.Delete(ctx, fields...); n != 2 || err != nil {
		t.Fatalf("Delete of %d fields = %d, %v; want the 2 that exist", len(fields), n, err)
	}
	values, expiry := h.Keys()
	if k := rdb.HKeys(ctx, values).Val(); len(k) != 1 || k[0] != "kept" || rdb.ZCard(ctx, expiry).Val() != 1 {
		t.Fatalf("left %v and %d expiries; want only kept", k, rdb.ZCard(ctx, expiry).Val())
	}
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
	job, err := jobs.EvictExpired(rdb, key, jobs.EvictConfig{Batch: 100, MaxBatches: 1})
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
	job, err := jobs.EvictExpired(rdb, key, jobs.EvictConfig{Batch: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 1000, More: false}, "one slice")
	want := []int64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0}
	if got := replies.get(); !slices.Equal(got, want) {
		t.Fatalf("script replies %v, want %v", got, want)
	}
}

// A field set again with a later expiry is kept, even when that happens
// while slices are evicting: reading and removing is one script.
func TestEvictExpiredKeepsFieldsSetAgain(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	key := testPrefix(t)
	h := mustHash(t, rdb, key)
	setFields(t, h, "f", 400, time.Millisecond)
	waitExpired(t, rdb)
	if err := h.Set(ctx, "f399", []byte("renewed"), time.Hour); err != nil { // just before
		t.Fatal(err)
	}
	job, err := jobs.EvictExpired(rdb, key, jobs.EvictConfig{Batch: 10, MaxBatches: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { // renews f0..f199 while the slices run
		for i := range 200 {
			if err := h.Set(ctx, "f"+strconv.Itoa(i), []byte("renewed"), time.Hour); err != nil {
				t.Errorf("Set: %v", err)
				return
			}
		}
	})
	evicted := 0
	for {
		rep := mustSlice(t, job, time.Second)
		evicted += rep.Items
		if !rep.More {
			break
		}
	}
	wg.Wait()
	evicted += mustSlice(t, job, time.Second).Items
	values, _ := h.Keys()
	all := rdb.HGetAll(ctx, values).Val()
	for i := range 400 {
		f := "f" + strconv.Itoa(i)
		renewed := i < 200 || i == 399
		if got, ok := all[f]; renewed && got != "renewed" {
			t.Errorf("renewed field %s = %q, %v; want it kept", f, got, ok)
		} else if !renewed && ok {
			t.Errorf("expired field %s = %q; want it evicted", f, got)
		}
	}
	if len(all) != 201 || evicted < 199 || evicted > 399 {
		t.Errorf("%d fields left, %d evicted; want 201 left", len(all), evicted)
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
	job, err := jobs.EvictExpiredMembers(rdb, key, jobs.EvictConfig{Batch: 100, MaxBatches: 1})
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
