package recruiter_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/recruiter"
)

// The five lines: a recruiter, a job, and an enlistment after a fast exit.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())

	// About once a minute fleet-wide, sooner while a backlog lasts: trim a
	// log stream, 500 entries a slice at most.
	err = rec.Register(recruiter.Func("trim-audit-log", func(ctx context.Context) (recruiter.Report, error) {
		n, err := rdb.XTrimMaxLenApprox(ctx, "audit", 100_000, 500).Result()
		return recruiter.Report{Items: int(n), More: n == 500}, err
	}), recruiter.JobConfig{Every: time.Minute, Budget: 20 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	http.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		rec.Enlist(r.Context()) // cheap answer given: offer a slice of this goroutine's time
	})
}

// Every makes a job run at most once per interval across the whole fleet,
// however many servers enlist. A fixed Rate, the share of enlistments
// that pick the job, replaces the automatic pace: here one in twenty.
func ExampleRecruiter_Register() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	err = rec.Register(recruiter.Func("refresh-top-sellers", func(ctx context.Context) (recruiter.Report, error) {
		ids, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: "sales:today", Start: 0, Stop: 9, Rev: true}).Result()
		if err != nil {
			return recruiter.Report{}, err
		}
		return recruiter.Report{Items: len(ids)}, rdb.Set(ctx, "top-sellers", ids, 0).Err()
	}), recruiter.JobConfig{Rate: 0.05, Every: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
}

// Middleware draws before the handler and finishes the draw after it: a
// dismissed request pays a few nanoseconds and nothing else. (This is the
// shape of package stealhttp, which also counts 204 and 304.)
func ExampleRecruiter_Draw() {
	var rec *recruiter.Recruiter // from recruiter.New
	middleware := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			draw := rec.Draw()
			if !draw.Recruited() {
				next.ServeHTTP(w, r) // the hot path: untouched
				return
			}
			ctx := draw.Context(r.Context()) // recruiter.MarkFastExit marks it
			next.ServeHTTP(w, r.WithContext(ctx))
			// In the background once the request's context ends; inline,
			// after the flush sends the response.
			if draw.Marked(ctx) {
				draw.Enlist(ctx, http.NewResponseController(w).Flush)
			}
		})
	}
	_ = middleware
}
