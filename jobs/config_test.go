package jobs_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// offlineClient is never dialled: constructors make no Redis call.
func offlineClient(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func nopHandler(context.Context, queue.Item) ([]byte, error) { return nil, nil }

func TestInvalidArgumentsAndConfigs(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	q := newQueue(t, rdb, "jobs", queue.Config{})
	hash := mustHash(t, rdb, "k")
	cases := []struct {
		name   string
		make   func() (recruiter.Job, error)
		target error
		field  string // the message must name it
	}{
		{"tidy nil queue", func() (recruiter.Job, error) { return jobs.TidyStale(nil, jobs.TidyConfig{}) }, jobs.ErrInvalidArgument, "nil queue"},
		{"tidy batch negative", func() (recruiter.Job, error) {
			return jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Batch: -1}})
		}, jobs.ErrInvalidConfig, "Batch -1"},
		{"tidy batch above max", func() (recruiter.Job, error) {
			return jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Batch: queue.BatchMax + 1}})
		}, jobs.ErrInvalidConfig, "Batch 1001"},
		{"tidy max batches negative", func() (recruiter.Job, error) {
			return jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{MaxBatches: -2}})
		}, jobs.ErrInvalidConfig, "MaxBatches -2"},
		{"tidy bad name", func() (recruiter.Job, error) {
			return jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Name: "tidy me"}})
		}, jobs.ErrInvalidConfig, "Name"},
		{"tidy redis timeout", func() (recruiter.Job, error) {
			return jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{RedisTimeout: -1}})
		}, jobs.ErrInvalidConfig, "RedisTimeout -1ns"},
		{"promote nil queue", func() (recruiter.Job, error) { return jobs.PromoteDue(nil, jobs.PromoteConfig{}) }, jobs.ErrInvalidArgument, "nil queue"},
		{"promote batch", func() (recruiter.Job, error) {
			return jobs.PromoteDue(q, jobs.PromoteConfig{Batching: jobs.Batching{Batch: 5000}})
		}, jobs.ErrInvalidConfig, "Batch 5000"},
		{"promote long name", func() (recruiter.Job, error) {
			return jobs.PromoteDue(q, jobs.PromoteConfig{Batching: jobs.Batching{Name: strings.Repeat("p", 129)}})
		}, jobs.ErrInvalidConfig, "Name"},
		{"drain nil queue", func() (recruiter.Job, error) { return jobs.Drain(nil, nopHandler, jobs.DrainConfig{}) }, jobs.ErrInvalidArgument, "nil queue"},
		{"drain nil handler", func() (recruiter.Job, error) { return jobs.Drain(q, nil, jobs.DrainConfig{}) }, jobs.ErrInvalidArgument, "nil handler"},
		{"drain batch", func() (recruiter.Job, error) {
			return jobs.Drain(q, nopHandler, jobs.DrainConfig{Batching: jobs.Batching{Batch: -5}})
		}, jobs.ErrInvalidConfig, "Batch -5"},
		{"drain redis timeout", func() (recruiter.Job, error) {
			return jobs.Drain(q, nopHandler, jobs.DrainConfig{Batching: jobs.Batching{RedisTimeout: time.Minute}})
		}, jobs.ErrInvalidConfig, "RedisTimeout"},
		{"evict nil hash", func() (recruiter.Job, error) { return jobs.EvictExpired(nil, jobs.EvictConfig{}) }, jobs.ErrInvalidArgument, "nil hash"},
		{"evict batch", func() (recruiter.Job, error) {
			return jobs.EvictExpired(hash, jobs.EvictConfig{Batching: jobs.Batching{Batch: 1001}})
		}, jobs.ErrInvalidConfig, "Batch 1001"},
		{"evict redis timeout", func() (recruiter.Job, error) {
			return jobs.EvictExpired(hash, jobs.EvictConfig{Batching: jobs.Batching{RedisTimeout: 11 * time.Second}})
		}, jobs.ErrInvalidConfig, "RedisTimeout 11s"},
		{"evict score unit", func() (recruiter.Job, error) {
			return jobs.EvictExpired(hash, jobs.EvictConfig{ScoreUnit: time.Second})
		}, jobs.ErrInvalidConfig, "ScoreUnit"},
		{"members nil client", func() (recruiter.Job, error) { return jobs.EvictExpiredMembers(nil, "k", jobs.EvictConfig{}) }, jobs.ErrInvalidArgument, "nil Redis client"},
		{"members empty key", func() (recruiter.Job, error) { return jobs.EvictExpiredMembers(rdb, "", jobs.EvictConfig{}) }, jobs.ErrInvalidArgument, "empty key"},
		{"members fractional unit", func() (recruiter.Job, error) {
			return jobs.EvictExpiredMembers(rdb, "k", jobs.EvictConfig{ScoreUnit: 1500 * time.Microsecond})
		}, jobs.ErrInvalidConfig, "ScoreUnit 1.5ms"},
		{"members negative unit", func() (recruiter.Job, error) {
			return jobs.EvictExpiredMembers(rdb, "k", jobs.EvictConfig{ScoreUnit: -time.Second})
		}, jobs.ErrInvalidConfig, "ScoreUnit -1s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			job, err := c.make()
			if job != nil || !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("got %v, %v; want an error wrapping %v that names %q", job, err, c.target, c.field)
			}
		})
	}
}

var validJobName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func TestNames(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	long1 := strings.Repeat("q", 127) + "1"
	long2 := strings.Repeat("q", 127) + "2"
	mustJob := func(job recruiter.Job, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return job.Name()
	}
	tidy := func(name, override string) string {
		return mustJob(jobs.TidyStale(newQueue(t, rdb, name, queue.Config{}), jobs.TidyConfig{Batching: jobs.Batching{Name: override}}))
	}
	q := newQueue(t, rdb, "mail", queue.Config{})
	got := map[string]string{
		"tidy":           tidy("mail", ""),
		"tidy override":  tidy("mail", "mail-tidy"),
		"drain":          mustJob(jobs.Drain(q, nopHandler, jobs.DrainConfig{})),
		"promote":        mustJob(jobs.PromoteDue(q, jobs.PromoteConfig{})),
		"evict":          mustJob(jobs.EvictExpired(mustHash(t, rdb, "sessions"), jobs.EvictConfig{})),
		"evict override": mustJob(jobs.EvictExpired(mustHash(t, rdb, "sessions"), jobs.EvictConfig{Batching: jobs.Batching{Name: "sess"}})),
		"members":        mustJob(jobs.EvictExpiredMembers(rdb, "presence", jobs.EvictConfig{})),
	}
	want := map[string]string{
		"tidy": "tidy.mail", "tidy override": "mail-tidy", "drain": "drain.mail", "promote": "promote.mail",
		"evict": "evict.sessions", "evict override": "sess", "members": "evict-members.presence",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: name %q, want %q", k, got[k], w)
		}
	}

	// Keys and long queue names are made valid, stay distinct and stable.
	derived := []string{
		tidy(long1, ""), tidy(long2, ""), tidy(long1, ""),
		mustJob(jobs.EvictExpired(mustHash(t, rdb, "app:{t7}:sessions"), jobs.EvictConfig{})),
		mustJob(jobs.EvictExpired(mustHash(t, rdb, "app:{t7};sessions"), jobs.EvictConfig{})),
		mustJob(jobs.EvictExpiredMembers(rdb, "sessions:é", jobs.EvictConfig{})),
		mustJob(jobs.EvictExpiredMembers(rdb, strings.Repeat("k:", 100), jobs.EvictConfig{})),
	}
	for _, name := range derived {
		if !validJobName.MatchString(name) {
			t.Errorf("derived name %q is not a valid job name", name)
		}
	}
	if derived[0] == derived[1] || derived[0] != derived[2] || derived[3] == derived[4] {
		t.Errorf("derived names %q: want distinct names for distinct subjects, equal for equal ones", derived)
	}
	if !strings.HasPrefix(derived[3], "evict.app__t7__sessions-") {
		t.Errorf("name of key app:{t7}:sessions = %q, want evict.app__t7__sessions-HASH", derived[3])
	}

	// The recruiter accepts them all.
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	noop := func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, nil }
	for i, name := range derived {
		if i == 2 {
			continue // the same as derived[0]
		}
		if err := rec.Register(recruiter.Func(name, noop), recruiter.JobConfig{Rate: 0.01}); err != nil {
			t.Errorf("Register(%q): %v", name, err)
		}
	}
}
