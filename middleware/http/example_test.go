package stealhttp_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// Five lines: a recruiter, a job, the middleware around a mux, and handlers
// that say when they answered cheaply.
func ExampleMiddleware() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, _ := recruiter.New(rdb, recruiter.Config{})
	rec.Register(recruiter.Func("trim-audit-log", trimAuditLog(rdb)), recruiter.JobConfig{Every: time.Minute})
	mux := http.NewServeMux()
	log.Fatal(http.ListenAndServe(":8080", stealhttp.Middleware(rec)(mux)))
}

// Handlers mark their fast exits; 204 and 304 count without a mark.
func ExampleMiddleware_markFastExit() {
	cache := map[string][]byte{}
	http.HandleFunc("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if item, ok := cache[r.PathValue("id")]; ok {
			recruiter.MarkFastExit(r.Context()) // a cache hit: this request may lend its time
			w.Write(item)
			return
		}
		http.NotFound(w, r)
	})
}

// Keep admin routes out of recruitment, and count any quick 200 as a fast exit.
func ExampleWithClassifier() {
	var rec *recruiter.Recruiter // from recruiter.New
	mw := stealhttp.Middleware(rec,
		stealhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/admin" }),
		stealhttp.WithClassifier(func(e stealhttp.Exit) bool {
			return stealhttp.DefaultClassifier(e) || e.Status == http.StatusOK && e.Elapsed < 2*time.Millisecond
		}),
	)
	_ = mw
}

func trimAuditLog(rdb *redis.Client) func(context.Context) (recruiter.Report, error) {
	return func(ctx context.Context) (recruiter.Report, error) {
		n, err := rdb.XTrimMaxLenApprox(ctx, "audit", 100_000, 500).Result()
		return recruiter.Report{Items: int(n), More: n == 500}, err
	}
}
