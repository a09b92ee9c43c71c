package stealecho_test

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	stealecho "github.com/worksteal/worksteal/middleware/echo"
	"github.com/worksteal/worksteal/recruiter"
)

// Five lines: a recruiter, a job, the middleware on an echo server, and
// handlers that say when they answered cheaply.
func ExampleMiddleware() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, _ := recruiter.New(rdb, recruiter.Config{})
	rec.Register(recruiter.Func("trim-audit-log", trimAuditLog(rdb)), recruiter.JobConfig{Every: time.Minute})
	e := echo.New()
	e.Use(stealecho.Middleware(rec))
	e.GET("/items/:id", func(c echo.Context) error {
		if item, ok := cache[c.Param("id")]; ok {
			recruiter.MarkFastExit(c.Request().Context()) // a cache hit: this request may lend its time
			return c.Blob(http.StatusOK, "application/json", item)
		}
		return echo.NewHTTPError(http.StatusNotFound)
	})
	e.Logger.Fatal(e.Start(":8080"))
}

// Keep admin routes out of recruitment, and count any quick 200 as a fast
// exit too.
func ExampleMiddlewareWithConfig() {
	var rec *recruiter.Recruiter // from recruiter.New
	e := echo.New()
	e.Use(stealecho.MiddlewareWithConfig(stealecho.Config{
		Recruiter: rec,
		Skipper:   func(c echo.Context) bool { return strings.HasPrefix(c.Path(), "/admin") },
		Classifier: func(x stealecho.Exit) bool {
			return stealecho.DefaultClassifier(x) || x.Status == http.StatusOK && x.Err == nil && x.Elapsed < 2*time.Millisecond
		},
	}))
}

var cache = map[string][]byte{}

func trimAuditLog(rdb *redis.Client) func(context.Context) (recruiter.Report, error) {
	return func(ctx context.Context) (recruiter.Report, error) {
		n, err := rdb.XTrimMaxLenApprox(ctx, "audit", 100_000, 500).Result()
		return recruiter.Report{Items: int(n), More: n == 500}, err
	}
}
