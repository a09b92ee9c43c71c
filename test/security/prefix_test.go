package security_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// Two applications share one Redis with prefixes "app-a" and "app-b",
// queues of different names, and jobs of the same names (drain, tidy,
// promote, evict and "shared"). Each touches only keys under its own
// prefix or hash tag, by the keys of every command its client sent and by
// a SCAN of the whole key space; and app-a's "shared" lock, held
// elsewhere, never skips app-b's "shared" job.
func TestApplicationsWithDifferentPrefixes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := testrig.Context(t, 60*time.Second)

	// Another process of app-a holds its "shared" job for a minute.
	const heldKey = "app-a:lock:shared"
	if err := admin.Set(ctx, heldKey, "held-by-another-app-a-process", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	type side struct {
		name, queue string
		keys        *keyRecorder
		shared      atomic.Int64
		app         *app
	}
	sides := []*side{{name: "app-a", queue: "orders"}, {name: "app-b", queue: "invoices"}}
	for _, s := range sides {
		rdb := srv.Client(t)
		s.keys = &keyRecorder{}
		rdb.AddHook(s.keys)
		shared := recruiter.Func("shared", func(context.Context) (recruiter.Report, error) {
			s.shared.Add(1)
			return recruiter.Report{Items: 1}, nil
		})
		s.app = startApp(t, rdb, appConfig{prefix: s.name, queue: s.queue, hashKey: s.name + ":sessions", items: 200, extra: shared})
	}
	a, b := sides[0], sides[1]
	testrig.Eventually(t, 30*time.Second, "both apps done, app-b's shared job run", func() bool {
		return a.app.done(ctx, "") && b.app.done(ctx, "") && b.shared.Load() >= 3
	}, func() string { return a.app.describe() + b.app.describe() })
	for _, s := range sides {
		s.app.shutdown(t)
		s.app.checkResults(t, ctx)
	}

	// The held lock skipped app-a's job only.
	if sa, sb := a.app.job("shared"), b.app.job("shared"); sa.Ran != 0 || a.shared.Load() != 0 || sa.SkippedLocked == 0 ||
		sb.Ran == 0 || sb.SkippedLocked != 0 {
		t.Fatalf("shared job: app-a ran %d (job saw %d), skipped locked %d; app-b ran %d, skipped locked %d; "+
			"want app-a locked out and app-b never", sa.Ran, a.shared.Load(), sa.SkippedLocked, sb.Ran, sb.SkippedLocked)
	}
	if v, err := admin.Get(ctx, heldKey).Result(); err != nil || v != "held-by-another-app-a-process" {
		t.Fatalf("%s = %q, %v: app-b touched app-a's lock", heldKey, v, err)
	}

	// Every command's keys are the sender's own.
	for _, s := range sides {
		touched, odd := s.keys.snapshot()
		if len(odd) != 0 {
			t.Errorf("%s sent commands whose keys this test cannot tell: %v", s.name, odd)
		}
		if len(touched) == 0 {
			t.Errorf("%s touched no keys", s.name)
		}
		for k := range touched {
			if !ownKey(s.name, k) {
				t.Errorf("%s touched %q, outside its prefix", s.name, k)
			}
		}
	}
	// And the key space holds nothing but the two apps' keys, both present.
	counts := map[string]int{}
	iter := admin.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		switch {
		case ownKey("app-a", k):
			counts["app-a"]++
		case ownKey("app-b", k):
			counts["app-b"]++
		default:
			t.Errorf("key %q belongs to neither app", k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if counts["app-a"] == 0 || counts["app-b"] == 0 {
		t.Fatalf("keys per app = %v; want both", counts)
	}
	t.Logf("keys per app %v; keys touched: app-a %d, app-b %d; shared job: app-b ran %d, app-a skipped %d",
		counts, len(must(a.keys.snapshot())), len(must(b.keys.snapshot())), b.app.job("shared").Ran, a.app.job("shared").SkippedLocked)
}

// ownKey reports whether key lies under prefix: "prefix:…" (locks, hashes
// named so) or "{prefix:…" (queues, expiring hashes' tags).
func ownKey(prefix, key string) bool {
	return strings.HasPrefix(key, prefix+":") || strings.HasPrefix(key, "{"+prefix+":")
}

// keyRecorder records the keys of every command a client sends.
type keyRecorder struct {
	mu      sync.Mutex
	touched map[string]bool
	odd     []string
}

func (h *keyRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *keyRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

func (h *keyRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.record(cmd)
		}
		return next(ctx, cmds)
	}
}

// record takes the keys by the command's shape: EVAL and EVALSHA name
// theirs after numkeys, BLMOVE has two, INFO (the recruiter's reading of
// the eviction policy) none, the rest one, first.
func (h *keyRecorder) record(cmd redis.Cmder) {
	args := cmd.Args()
	var keys []any
	switch name := strings.ToLower(cmd.Name()); name {
	case "hello", "client", "ping", "auth", "info":
	case "eval", "evalsha", "evalsha_ro", "eval_ro":
		n, err := strconv.Atoi(toString(args[2]))
		if err != nil || 3+n > len(args) {
			h.addOdd(name)
			return
		}
		keys = args[3 : 3+n]
	case "blmove":
		keys = args[1:3]
	default:
		if len(args) < 2 {
			h.addOdd(name)
			return
		}
		keys = args[1:2]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.touched == nil {
		h.touched = map[string]bool{}
	}
	for _, k := range keys {
		h.touched[toString(k)] = true
	}
}

func (h *keyRecorder) addOdd(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.odd = append(h.odd, name)
}

func (h *keyRecorder) snapshot() (map[string]bool, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	touched := make(map[string]bool, len(h.touched))
	for k := range h.touched {
		touched[k] = true
	}
	return touched, append([]string(nil), h.odd...)
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func must[T, U any](v T, _ U) T { return v }
